import { describe, expect, it } from 'vitest';
import { storageProblemField, validateStorageForm } from './Storages';
import { parseGroupList, validateAccount } from './Accounts';

describe('storage form', () => {
  const base = { name: 'nfs_01', type: 'nfs', enabled: true, rootPath: '/tmp/kv/', keysPerFile: '8', specJson: '{}' };
  it('builds an nfs storage from its fields', () => {
    expect(validateStorageForm(base, true).input).toEqual({ name: 'nfs_01', type: 'nfs', enabled: true,
      spec: { root_path: '/tmp/kv/', key_count_per_file: 8 } });
  });
  it('says what is missing or malformed', () => {
    const r = validateStorageForm({ ...base, name: 'a/b', rootPath: ' ', keysPerFile: 'x' }, true);
    expect(r.input).toBeUndefined();
    expect(r.errors.name).toMatch(/character 1/);
    expect(r.errors['spec.root_path']).toMatch(/required/);
    expect(r.errors['spec.key_count_per_file']).toMatch(/whole number/);
    expect(validateStorageForm({ ...base, type: 'hf3fs', specJson: '[1]' }, true).errors.spec).toMatch(/JSON object/);
  });
  it('maps the control plane\'s spec field names to the form', () => {
    expect(storageProblemField('nfs.root_path')).toBe('spec.root_path');
    expect(storageProblemField('threefs.mountpoint')).toBe('spec.mountpoint');
    expect(storageProblemField('global_unique_name')).toBe('name');
    expect(storageProblemField('type')).toBe('type');
    expect(storageProblemField('event_report.snapshot_min_interval_ms')).toBe('spec.snapshot_min_interval_ms');
  });
  it('builds an event-report storage from its five durations; blank takes the default', () => {
    const ev = { ...base, name: 'engine_events', type: 'event_report_l1p5', report: {
      heartbeat_timeout_ms: '1000', cleanup_grace_ms: '0', liveness_check_interval_ms: '',
      snapshot_min_interval_ms: '30000', snapshot_delta_drain_timeout_ms: '0' } };
    expect(validateStorageForm(ev, true).input).toEqual({ name: 'engine_events', type: 'event_report_l1p5',
      enabled: true, spec: { heartbeat_timeout_ms: 1000, cleanup_grace_ms: 0, snapshot_min_interval_ms: 30000,
        snapshot_delta_drain_timeout_ms: 0 } });
    const bad = validateStorageForm({ ...ev, type: 'event_report_l2', report: { snapshot_min_interval_ms: '0',
      cleanup_grace_ms: '-1', heartbeat_timeout_ms: '86400001', liveness_check_interval_ms: 'soon' } }, true);
    expect(bad.input).toBeUndefined();
    expect(bad.errors['spec.snapshot_min_interval_ms']).toMatch(/between 1 and 86,400,000/);
    expect(bad.errors['spec.cleanup_grace_ms']).toMatch(/between 0 and/);
    expect(bad.errors['spec.heartbeat_timeout_ms']).toMatch(/between 1 and/);
    expect(bad.errors['spec.liveness_check_interval_ms']).toMatch(/whole number/);
  });
});

describe('account form', () => {
  it('checks name, password strength, role and groups per mode', () => {
    const e = validateAccount('create', { name: 'team search', password: 'short', role: 'root', groups: 'a, .b' });
    expect(e.name).toMatch(/character 4/);
    expect(e.password).toMatch(/12 characters/);
    expect(e.role).toBe('Choose a role');
    expect(e.groups).toMatch(/'.b' must not start/);
    expect(validateAccount('edit', { name: 'x', password: '', role: 'tenant', groups: 'search' })).toEqual({});
    expect(validateAccount('password', { name: 'x', password: 'Correct-Horse-9', role: '', groups: '' })).toEqual({});
  });
  it('reads a comma or space separated group list without duplicates', () => {
    expect(parseGroupList(' search, chat  search\nrag ')).toEqual(['search', 'chat', 'rag']);
    expect(parseGroupList('')).toEqual([]);
  });
});
