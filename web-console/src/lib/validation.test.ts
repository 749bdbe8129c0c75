import { describe, expect, it } from 'vitest';
import { ApiError } from '../api/client';
import {
  bytesProblem, fieldOfProblem, intProblem, nameProblem, parseBytes, parseCount, parseTokenIds, passwordProblem,
  serverErrors,
} from './validation';
import { emptyGroupForm, groupFormToInput, validateGroupForm } from './groupForm';

describe('names (Identifiers rule)', () => {
  it('accepts the usual names', () => {
    for (const n of ['search', 'nfs_01', 'qwen3-32b.prod', 'a', 'x'.repeat(128)]) expect(nameProblem(n)).toBeNull();
  });
  it('refuses empty, too long, a leading dot or dash, and other characters', () => {
    expect(nameProblem('')).toBe('must not be empty');
    expect(nameProblem('x'.repeat(129))).toMatch(/at most 128/);
    expect(nameProblem('.hidden')).toMatch(/must not start with '.'/);
    expect(nameProblem('-opt')).toMatch(/must not start with '-'/);
    expect(nameProblem('a/b')).toMatch(/character 1 is '\/'/);
    expect(nameProblem('a b')).toMatch(/character 1/);
  });
  it('lets accounts hold @, nothing else', () => {
    expect(nameProblem('ops@example.com', 'account')).toBeNull();
    expect(nameProblem('ops@example.com', 'group')).toMatch(/character 3/);
  });
});

describe('numbers', () => {
  it('checks whole numbers in range', () => {
    expect(intProblem('5', 0, 10)).toBeNull();
    expect(intProblem('', 0, 10)).toBe('is required');
    expect(intProblem('', 0, 10, false)).toBeNull();
    expect(intProblem('1.5', 0, 10)).toBe('must be a whole number');
    expect(intProblem('11', 0, 10)).toMatch(/between 0 and 10/);
  });
  it('reads token counts with K/M/G', () => {
    expect(parseCount('100K')).toBe(100_000);
    expect(parseCount('1.5M')).toBe(1_500_000);
    expect(parseCount('2g')).toBe(2_000_000_000);
    expect(parseCount('1,000')).toBe(1000);
    expect(parseCount('abc')).toBeNull();
    expect(parseCount('-5')).toBeNull();
  });
  it('reads byte sizes', () => {
    expect(parseBytes('30000000000')).toBe(30_000_000_000);
    expect(parseBytes('30GB')).toBe(30_000_000_000);
    expect(parseBytes('1GiB')).toBe(1024 ** 3);
    expect(parseBytes('2 MiB')).toBe(2 * 1024 ** 2);
    expect(parseBytes('5 parsecs')).toBeNull();
    expect(bytesProblem('0', 1, 100)).toMatch(/between 1 and 100/);
  });
});

describe('passwords (PasswordHasher.weakness)', () => {
  it('needs 12 characters of 3 classes, without the name', () => {
    expect(passwordProblem('short1A!')).toMatch(/12 characters/);
    expect(passwordProblem('alllowercaseletters')).toMatch(/3 of/);
    expect(passwordProblem('Correct-Horse-9')).toBeNull();
    expect(passwordProblem('Team-search-99', 'search')).toMatch(/account name/);
  });
});

describe('token ids', () => {
  it('reads separators, JSON arrays and {token_ids}', () => {
    expect(parseTokenIds('1, 2 3\n4;5')).toEqual([1, 2, 3, 4, 5]);
    expect(parseTokenIds('[10, 20, 30]')).toEqual([10, 20, 30]);
    expect(parseTokenIds('{"token_ids": [7, 8]}')).toEqual([7, 8]);
  });
  it('names the bad entry', () => {
    expect(() => parseTokenIds('1, 2, x3')).toThrow(/token 3/);
    expect(() => parseTokenIds('[1, "a"]')).toThrow(/token 2/);
    expect(() => parseTokenIds('')).toThrow(/at least one/);
    expect(() => parseTokenIds('[1, 2')).toThrow(/not valid JSON/);
    expect(() => parseTokenIds('{"x": 1}')).toThrow(/array/);
  });
});

describe('server problems land next to their field', () => {
  const fields = ['name', 'quotaBytes', 'storageCandidates', 'eviction.policy', 'spec'];
  it('maps the problem field, an indexed one, and a nested one to the form', () => {
    expect(fieldOfProblem('quotaBytes', fields)).toBe('quotaBytes');
    expect(fieldOfProblem('storageCandidates[2]', fields)).toBe('storageCandidates');
    expect(fieldOfProblem('spec.root_path', fields)).toBe('spec');
    expect(fieldOfProblem('eviction.policy', fields)).toBe('eviction.policy');
    expect(fieldOfProblem('If-Match', fields)).toBeUndefined();
    expect(fieldOfProblem(undefined, fields)).toBeUndefined();
  });
  it('puts the detail on the field, or above the form when no field matches', () => {
    const e = new ApiError(400, { status: 400, detail: "unknown storage candidate 'x'", field: 'storageCandidates[0]' });
    expect(serverErrors(e, fields)).toEqual({ fields: { storageCandidates: "unknown storage candidate 'x'" } });
    const f = new ApiError(409, { status: 409, detail: 'group has instances' });
    expect(serverErrors(f, fields)).toEqual({ fields: {}, form: 'group has instances' });
  });
});

describe('group form', () => {
  it('says what is wrong before sending', () => {
    const v = { ...emptyGroupForm(), name: '.bad', quotaBytes: '', softPercent: '96', hardPercent: '95', policy: 'TTL', ttlSeconds: '0' };
    const e = validateGroupForm(v, true);
    expect(e.name).toMatch(/must not start/);
    expect(e.quotaBytes).toMatch(/required/);
    expect(e['waterLevels.softPercent']).toMatch(/must not exceed/);
    expect(e['eviction.ttlSeconds']).toMatch(/> 0 with policy TTL/);
    expect(e.storageCandidates).toMatch(/at least one/);
  });
  it('refuses a type quota above the total', () => {
    const v = { ...emptyGroupForm(), name: 'g', quotaBytes: '1000', typeQuotas: { nfs: '2000' }, storageCandidates: ['s'] };
    expect(validateGroupForm(v, true)['storageTypeQuotas.nfs']).toMatch(/must not exceed/);
  });
  it('builds the GroupSpec body of a valid form', () => {
    const v = { ...emptyGroupForm(), name: 'search', quotaBytes: '30GB', typeQuotas: { nfs: '10GB' }, storageCandidates: ['nfs_01'],
      allowAnonymousMeta: true };
    expect(validateGroupForm(v, true)).toEqual({});
    expect(groupFormToInput(v, true)).toEqual({
      name: 'search', quotaBytes: 30_000_000_000, storageTypeQuotas: { nfs: 10_000_000_000 },
      waterLevels: { softPercent: 80, hardPercent: 95 },
      eviction: { policy: 'LRU', triggerPeriodSeconds: 5, stepSize: 1000, stepPercentage: 10, ttlSeconds: 0, readerLeaseMs: 1000 },
      storageCandidates: ['nfs_01'], eventReportStorageCandidates: [], maxInstanceCount: 0, allowAnonymousMeta: true,
    });
    expect(groupFormToInput(v, false).name).toBeUndefined();
  });
});
