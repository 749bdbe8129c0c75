// The instance-group form: values as typed, validation (GroupService.resolve's rules), the request body,
// and the rows of a conflict view.
import type { Group, GroupInput } from '../api/types';
import { POLICIES, STORAGE_TYPES } from '../api/types';
import type { ConflictRow } from '../components/ConflictView';
import { formatBytes } from './format';
import { bytesProblem, intProblem, nameProblem, parseBytes, parseInteger, type FieldErrors } from './validation';

export const MAX_QUOTA_BYTES = 2 ** 60;
export const MAX_TRIGGER_PERIOD_SECONDS = 86_400;
export const MAX_STEP_SIZE = 1 << 20;
export const MAX_TTL_SECONDS = 100 * 365 * 86_400;
export const MAX_READER_LEASE_MS = 3_600_000;
export const MAX_INSTANCES = 1 << 20;

export interface GroupFormValues {
  name: string;
  quotaBytes: string;
  typeQuotas: Record<string, string>;
  softPercent: string;
  hardPercent: string;
  policy: string;
  triggerPeriodSeconds: string;
  stepSize: string;
  stepPercentage: string;
  ttlSeconds: string;
  readerLeaseMs: string;
  storageCandidates: string[];
  eventReportStorageCandidates: string[];
  maxInstanceCount: string;
  allowAnonymousMeta: boolean;
}

/** Form field names = the server's problem `field` names, so a refusal lands next to its field. */
export const GROUP_FIELDS = [
  'name', 'quotaBytes', ...STORAGE_TYPES.map((t) => `storageTypeQuotas.${t}`), 'storageTypeQuotas',
  'waterLevels.softPercent', 'waterLevels.hardPercent', 'eviction.policy', 'eviction.triggerPeriodSeconds',
  'eviction.stepSize', 'eviction.stepPercentage', 'eviction.ttlSeconds', 'eviction.readerLeaseMs',
  'storageCandidates', 'eventReportStorageCandidates', 'maxInstanceCount', 'allowAnonymousMeta',
] as const;

export function emptyGroupForm(): GroupFormValues {
  return {
    name: '', quotaBytes: '', typeQuotas: {}, softPercent: '80', hardPercent: '95', policy: 'LRU',
    triggerPeriodSeconds: '5', stepSize: '1000', stepPercentage: '10', ttlSeconds: '0', readerLeaseMs: '1000',
    storageCandidates: [], eventReportStorageCandidates: [], maxInstanceCount: '0', allowAnonymousMeta: false,
  };
}

export function groupToForm(g: Group): GroupFormValues {
  const tq: Record<string, string> = {};
  for (const [t, v] of Object.entries(g.storageTypeQuotas ?? {})) tq[t] = String(v);
  return {
    name: g.name,
    quotaBytes: String(g.quotaBytes),
    typeQuotas: tq,
    softPercent: String(g.waterLevels?.softPercent ?? 80),
    hardPercent: String(g.waterLevels?.hardPercent ?? 95),
    policy: String(g.eviction?.policy ?? 'LRU'),
    triggerPeriodSeconds: String(g.eviction?.triggerPeriodSeconds ?? 5),
    stepSize: String(g.eviction?.stepSize ?? 1000),
    stepPercentage: String(g.eviction?.stepPercentage ?? 10),
    ttlSeconds: String(g.eviction?.ttlSeconds ?? 0),
    readerLeaseMs: String(g.eviction?.readerLeaseMs ?? 1000),
    storageCandidates: [...(g.storageCandidates ?? [])],
    eventReportStorageCandidates: [...(g.eventReportStorageCandidates ?? [])],
    maxInstanceCount: String(g.maxInstanceCount ?? 0),
    allowAnonymousMeta: !!g.allowAnonymousMeta,
  };
}

export function validateGroupForm(v: GroupFormValues, isNew: boolean): FieldErrors {
  const e: FieldErrors = {};
  if (isNew) {
    const p = nameProblem(v.name, 'group');
    if (p) e.name = `Name ${p}`;
  }
  const qp = bytesProblem(v.quotaBytes, 1, MAX_QUOTA_BYTES);
  if (qp) e.quotaBytes = `Quota ${qp}`;
  const quota = parseBytes(v.quotaBytes);
  for (const t of STORAGE_TYPES) {
    const raw = v.typeQuotas[t] ?? '';
    const p = bytesProblem(raw, 0, MAX_QUOTA_BYTES, false);
    if (p) {
      e[`storageTypeQuotas.${t}`] = `${t} quota ${p}`;
    } else if (raw.trim() && quota !== null && (parseBytes(raw) ?? 0) > quota) {
      e[`storageTypeQuotas.${t}`] = `${t} quota must not exceed the total quota`;
    }
  }
  const sp = intProblem(v.softPercent, 0, 100);
  if (sp) e['waterLevels.softPercent'] = `Soft water level ${sp}`;
  const hp = intProblem(v.hardPercent, 0, 100);
  if (hp) e['waterLevels.hardPercent'] = `Hard water level ${hp}`;
  if (!sp && !hp && Number(v.softPercent) > Number(v.hardPercent)) {
    e['waterLevels.softPercent'] = 'Soft water level must not exceed the hard water level';
  }
  if (!POLICIES.includes(v.policy as (typeof POLICIES)[number])) {
    e['eviction.policy'] = `Eviction policy must be one of ${POLICIES.join(', ')}`;
  }
  const tp = intProblem(v.triggerPeriodSeconds, 0, MAX_TRIGGER_PERIOD_SECONDS);
  if (tp) e['eviction.triggerPeriodSeconds'] = `Trigger period ${tp}`;
  const ss = intProblem(v.stepSize, 0, MAX_STEP_SIZE);
  if (ss) e['eviction.stepSize'] = `Step size ${ss}`;
  const spc = intProblem(v.stepPercentage, 0, 100);
  if (spc) e['eviction.stepPercentage'] = `Step percentage ${spc}`;
  const ttl = intProblem(v.ttlSeconds, 0, MAX_TTL_SECONDS);
  if (ttl) e['eviction.ttlSeconds'] = `TTL ${ttl}`;
  else if (v.policy === 'TTL' && Number(v.ttlSeconds) <= 0) e['eviction.ttlSeconds'] = 'TTL must be > 0 with policy TTL';
  const rl = intProblem(v.readerLeaseMs, 0, MAX_READER_LEASE_MS);
  if (rl) e['eviction.readerLeaseMs'] = `Reader lease ${rl}`;
  if (v.storageCandidates.length === 0) e.storageCandidates = 'Choose at least one storage';
  const mi = intProblem(v.maxInstanceCount, 0, MAX_INSTANCES);
  if (mi) e.maxInstanceCount = `Max instance count ${mi}`;
  return e;
}

/** The request body of a valid form (call validateGroupForm first). */
export function groupFormToInput(v: GroupFormValues, isNew: boolean): GroupInput {
  const tq: Record<string, number> = {};
  for (const t of STORAGE_TYPES) {
    const raw = (v.typeQuotas[t] ?? '').trim();
    if (raw) tq[t] = parseBytes(raw) as number;
  }
  const int = (s: string) => parseInteger(s) as number;
  return {
    ...(isNew ? { name: v.name } : {}),
    quotaBytes: parseBytes(v.quotaBytes) as number,
    storageTypeQuotas: tq,
    waterLevels: { softPercent: int(v.softPercent), hardPercent: int(v.hardPercent) },
    eviction: {
      policy: v.policy,
      triggerPeriodSeconds: int(v.triggerPeriodSeconds),
      stepSize: int(v.stepSize),
      stepPercentage: int(v.stepPercentage),
      ttlSeconds: int(v.ttlSeconds),
      readerLeaseMs: int(v.readerLeaseMs),
    },
    storageCandidates: v.storageCandidates,
    eventReportStorageCandidates: v.eventReportStorageCandidates,
    maxInstanceCount: int(v.maxInstanceCount),
    allowAnonymousMeta: v.allowAnonymousMeta,
  };
}

/** Bytes as the API has them (plain digits, searchable) with a readable size beside. */
function bytesText(raw: string): string {
  const n = parseBytes(raw);
  return raw.trim() === '' ? '–' : n === null ? raw : `${n} (${formatBytes(n)})`;
}

/**
 * Current values (a fresh GET) beside the user's edit, one row per field; with the values the user loaded
 * (`original`), the rows tell which fields someone else changed meanwhile.
 */
export function groupConflictRows(current: Group, mine: GroupFormValues, original?: GroupFormValues): ConflictRow[] {
  const cur = groupToForm(current);
  const rows: ConflictRow[] = [
    { field: 'quotaBytes', label: 'Quota (bytes)', current: bytesText(cur.quotaBytes), mine: bytesText(mine.quotaBytes),
      original: original && bytesText(original.quotaBytes) },
  ];
  for (const t of STORAGE_TYPES) {
    const c = bytesText(cur.typeQuotas[t] ?? '');
    const m = bytesText(mine.typeQuotas[t] ?? '');
    if (c !== '–' || m !== '–') {
      rows.push({ field: `storageTypeQuotas.${t}`, label: `Quota for ${t} (bytes)`, current: c, mine: m,
        original: original && bytesText(original.typeQuotas[t] ?? '') });
    }
  }
  const plain: [string, string, keyof GroupFormValues][] = [
    ['waterLevels.softPercent', 'Soft water level (%)', 'softPercent'],
    ['waterLevels.hardPercent', 'Hard water level (%)', 'hardPercent'],
    ['eviction.policy', 'Eviction policy', 'policy'],
    ['eviction.triggerPeriodSeconds', 'Trigger period (s)', 'triggerPeriodSeconds'],
    ['eviction.stepSize', 'Step size', 'stepSize'],
    ['eviction.stepPercentage', 'Step percentage (%)', 'stepPercentage'],
    ['eviction.ttlSeconds', 'TTL (s)', 'ttlSeconds'],
    ['eviction.readerLeaseMs', 'Reader lease (ms)', 'readerLeaseMs'],
    ['maxInstanceCount', 'Max instance count', 'maxInstanceCount'],
  ];
  for (const [field, label, k] of plain) {
    rows.push({ field, label, current: String(cur[k]).trim(), mine: String(mine[k]).trim(),
      original: original && String(original[k]).trim() });
  }
  const list = (v: GroupFormValues) => v.storageCandidates.join(', ') || '–';
  const yes = (v: GroupFormValues) => (v.allowAnonymousMeta ? 'yes' : 'no');
  rows.push({ field: 'storageCandidates', label: 'Storage candidates', current: list(cur), mine: list(mine),
    original: original && list(original) });
  const reports = (v: GroupFormValues) => v.eventReportStorageCandidates.join(', ') || '–';
  rows.push({ field: 'eventReportStorageCandidates', label: 'Event-report storages', current: reports(cur),
    mine: reports(mine), original: original && reports(original) });
  rows.push({ field: 'allowAnonymousMeta', label: 'Anonymous access', current: yes(cur), mine: yes(mine),
    original: original && yes(original) });
  return rows;
}
