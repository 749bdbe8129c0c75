// Shapes of the control plane's REST answers (see control-plane/**Resource.java and console-contract).

export interface Page<T> {
  items: T[];
  page: number;
  size: number;
  total: number;
}

export type EvictionPolicy = 'LRU' | 'LFU' | 'TTL' | 'PREFIX_LRU';
export const POLICIES: EvictionPolicy[] = ['LRU', 'LFU', 'TTL', 'PREFIX_LRU'];
/** Data storage types (hold block bytes: quotas, placement candidates). */
export const STORAGE_TYPES = ['nfs', 'hf3fs', 'mooncake', 'tair_mem_pool', 'vcns_hf3fs'] as const;
/** Event-report storages: no bytes; where engines report their own caches (KVCM ReportEvent). */
export const EVENT_REPORT_TYPES = ['event_report_l1p5', 'event_report_l2'] as const;
export const ALL_STORAGE_TYPES = [...STORAGE_TYPES, ...EVENT_REPORT_TYPES] as const;
export const isEventReportType = (t: string | undefined): boolean =>
  (EVENT_REPORT_TYPES as readonly string[]).includes(t ?? '');
/** The five durations of an event-report storage with KVCM's defaults (ms), and their lower bounds. */
export const EVENT_REPORT_FIELDS = [
  { key: 'heartbeat_timeout_ms', label: 'Heartbeat timeout (ms)', dflt: 30_000, min: 1 },
  { key: 'cleanup_grace_ms', label: 'Cleanup grace (ms)', dflt: 300_000, min: 0 },
  { key: 'liveness_check_interval_ms', label: 'Liveness check interval (ms)', dflt: 5_000, min: 1 },
  { key: 'snapshot_min_interval_ms', label: 'Snapshot min interval (ms)', dflt: 30_000, min: 1 },
  { key: 'snapshot_delta_drain_timeout_ms', label: 'Snapshot delta drain timeout (ms)', dflt: 10_000, min: 0 },
] as const;
/** Upper bound of each duration (one day), as the control plane checks it. */
export const MAX_EVENT_REPORT_MS = 86_400_000;
export const ROLES = ['admin', 'operator', 'tenant'] as const;

export interface WaterLevels {
  softPercent: number;
  hardPercent: number;
}

export interface Eviction {
  policy: EvictionPolicy | string;
  triggerPeriodSeconds: number;
  stepSize: number;
  stepPercentage: number;
  ttlSeconds: number;
  readerLeaseMs: number;
}

export interface Group {
  name: string;
  quotaBytes: number;
  storageTypeQuotas: Record<string, number>;
  waterLevels: WaterLevels;
  eviction: Eviction;
  storageCandidates: string[];
  /** Event-report storages the group's engines report to (no bytes). */
  eventReportStorageCandidates?: string[];
  /** Candidates (of either list) that name no storage (yet): shown as missing; the metadata plane skips them. */
  missingStorages?: string[];
  maxInstanceCount: number;
  quotaGroupName?: string;
  allowAnonymousMeta: boolean;
  userData?: string;
  version?: number;
  createdAt?: string;
  updatedAt?: string;
  usage?: { usedBytes: number; usedPercent: number; level: string; byType: Record<string, number> };
}

/** What a group create/update sends (GroupSpec). */
export interface GroupInput {
  name?: string;
  quotaBytes?: number;
  storageTypeQuotas?: Record<string, number>;
  waterLevels?: Partial<WaterLevels>;
  eviction?: Partial<Eviction>;
  storageCandidates?: string[];
  eventReportStorageCandidates?: string[];
  maxInstanceCount?: number;
  allowAnonymousMeta?: boolean;
}

export interface Storage {
  name: string;
  type: string;
  enabled: boolean;
  checkAvailableWhenOpen: boolean;
  spec: Record<string, unknown>;
  version?: number;
  createdAt?: string;
  updatedAt?: string;
}

export interface StorageInput {
  name?: string;
  type?: string;
  enabled?: boolean;
  checkAvailableWhenOpen?: boolean;
  spec?: Record<string, unknown>;
}

export interface Account {
  name: string;
  role: string;
  groups: string[];
  version?: number;
  createdAt?: string;
  updatedAt?: string;
}

export interface AccountInput {
  name?: string;
  password?: string;
  role?: string;
  groups?: string[];
}

export interface Instance {
  instanceId: string;
  group: string;
  quotaGroupName?: string;
  blockSize: number;
  hashScheme: string;
  modelDeployment?: Record<string, unknown>;
  locationSpecInfos?: { name: string; size: number }[];
  locationSpecGroups?: unknown[];
  version?: number;
  createdAt?: string;
  updatedAt?: string;
}

/** The metadata plane's InstanceSummary (GET /api/v1/meta/instances/{id}). */
export interface MetaInstance {
  instance_id: string;
  instance_group: string;
  block_size: number;
  hash_scheme: string;
  specs: string[];
  bytes_per_block: number;
  keys: number;
  open_write_sessions?: number;
  file_slots?: number;
}

export interface BlockState {
  block: number;
  key: string | number;
  hex: string;
  status: string;
  cached: boolean;
}

export interface BlockKeysResponse {
  instance_id: string;
  hash_scheme: string;
  block_size: number;
  tokens: number;
  tokens_not_in_a_full_block: number;
  prefix_hit_blocks: number;
  blocks: BlockState[];
}

// ---- stats (contract: new on the control plane)

export type ByReason = Record<string, number>;

export interface GroupStats {
  group: string;
  quotaBytes: number;
  usedBytes: number;
  usageByType: Record<string, number>;
  softPercent: number;
  hardPercent: number;
  hitRate: { last5m: number | null; lastHour: number | null; lastDay: number | null };
  queriesLastHour: number;
  evictionsPerMinute: ByReason;
}

export interface InstanceStats {
  instance: string;
  group: string;
  hitRateLastHour: number | null;
  queriesLastHour: number;
  hitBlocksLastHour: number;
  queriedBlocksLastHour: number;
}

export interface StatsSummary {
  groups: GroupStats[];
  instances: InstanceStats[];
  totals: {
    groups: number;
    instances: number;
    storages: number;
    quotaBytes: number;
    usedBytes: number;
    hitRateLastHour: number | null;
  };
}

export interface StatsPoint {
  t: string;
  queries: number;
  queriedBlocks: number;
  hitBlocks: number;
  hitRate: number | null;
  writtenBlocks: number;
  evictedBlocks: ByReason;
}

export interface StatsSeries {
  step: string;
  since?: string;
  until?: string;
  points: StatsPoint[];
}

export interface UsagePoint {
  t: string;
  byType: Record<string, number>;
  usedBytes: number;
}

export interface UsageSeries {
  step: string;
  points: UsagePoint[];
}

export type ServiceStatus = 'UP' | 'DOWN' | string;

export interface Services {
  controlPlane: { status: ServiceStatus; version?: string; startedAt?: string };
  metadataPlanes: {
    id: string;
    url?: string;
    leader: boolean;
    status: ServiceStatus;
    lastSeen?: string;
    store?: string;
    instances?: number;
    keys?: number;
    version?: string;
  }[];
  agents: { id: string; status: ServiceStatus; lastSeen?: string; tiers?: Record<string, unknown> }[];
}

// ---- what-if

export interface Trace {
  name: string;
  kind: 'example' | 'uploaded' | string;
  requests: number;
  blocks: number;
  bytes: number;
}

export interface WhatIfRequest {
  trace: string;
  policies: string[];
  capacities?: number[];
  capacityRange?: { min: number; max: number; points: number };
  water?: number;
  stepPercentage?: number;
  target?: { policy: string; hitRate: number };
}

export interface WhatIfResult {
  policy: string;
  capacityTokens: number;
  capacityBlocks: number;
  hitRate: number;
  hitBlocks?: number;
  queriedBlocks?: number;
  writtenBlocks?: number;
  evictedBlocks?: number;
  refusedBlocks?: number;
}

export interface WhatIfSmallest {
  policy: string;
  hitRate: number;
  reached: boolean;
  capacityTokens: number | null;
  capacityBlocks: number | null;
  /** the hit rate the smallest capacity reached */
  achievedHitRate?: number | null;
  probes?: { capacityTokens: number; capacityBlocks: number; hitRate: number }[];
  note?: string | null;
}

export type RunState = 'queued' | 'running' | 'done' | 'cancelled' | 'failed';

export interface WhatIfRun {
  id: string;
  state: RunState | string;
  error?: string | null;
  request?: WhatIfRequest;
  trace?: { name: string; requests: number; blocks: number; distinct?: number; blockTokens?: number };
  progress?: { runsDone: number; runsTotal: number; accessesDone: number; accessesTotal: number; fraction: number };
  startedAt?: string | null;
  finishedAt?: string | null;
  elapsedSeconds?: number | null;
  accessesPerSecond?: number | null;
  ceiling?: { hitRate: number } | null;
  results?: WhatIfResult[];
  smallest?: WhatIfSmallest | null;
}
