// Engine caches (issue 36): what the metadata plane learned from the engines' own KV events (vLLM/SGLang over
// ZMQ or Kafka, KVCM ReportEvent), reached through the control plane's /api/v1/meta/engine/** proxy.
import { useQuery, type UseQueryOptions } from '@tanstack/react-query';
import { api, request } from './client';
import { LIVE_MS } from './hooks';

export type PodSource = 'zmq' | 'kafka' | 'kvcm' | string;
export type PodState = 'live' | 'replaying' | 'uncertain' | string;

/** One engine pod's view of an instance: blocks per engine tier (gpu, cpu, disk…). */
export interface EnginePod {
  pod: string;
  source?: PodSource;
  /** false: the pod is known but not used for scoring (hidden). */
  visible?: boolean;
  state?: PodState;
  tiers: Record<string, number>;
  last_event_at?: string | null;
  last_seq?: number | null;
}

export interface RouterPoint {
  minute: string;
  queries: number;
  routed_hit_rate: number | null;
  random_hit_rate: number | null;
  pool_hit_rate: number | null;
}

/** The hit rate a prefix-aware router would have got, against a random pick and the pool. */
export interface RouterStats {
  queries: number;
  prompt_blocks: number;
  routed_hit_blocks: number;
  routed_hit_rate: number | null;
  random_hit_rate: number | null;
  pool_hit_rate: number | null;
  series: RouterPoint[];
}

export interface EngineCache {
  instance_id: string;
  pods: EnginePod[];
  pool?: { keys: number };
  router?: RouterStats;
}

/** An instance that engines report for (GET /api/v1/engine/instances), normalised from whatever shape came. */
export interface EngineInstance {
  instance_id: string;
  pods: number;
  /** Pods the router uses; uncertain pods (events lost); whether the instance is registered with the pool. */
  visible_pods?: number;
  uncertain_pods?: number;
  registered?: boolean;
  group?: string;
  extra: Record<string, unknown>;
}

export interface ScoreRequest {
  instance_id: string;
  token_ids?: number[];
  /** Decimal strings: 64-bit keys do not fit a JS number, so they go into the JSON body verbatim. */
  block_keys?: string[];
  tier_weights?: Record<string, number>;
}

export interface PodScore {
  pod: string;
  longest_prefix: number;
  prefix_per_tier: Record<string, number>;
  score: number;
}

export interface ScoreResponse {
  instance_id: string;
  blocks: number;
  pods: PodScore[];
  pool: { serving_prefix: number };
}

const num = (v: unknown): number | undefined => (typeof v === 'number' && Number.isFinite(v) ? v : undefined);

/** Tolerant reading of the instance list: a bare array or {items|instances: [...]}; pods a count or a list. */
export function normaliseEngineInstances(raw: unknown): EngineInstance[] {
  const list: unknown[] = Array.isArray(raw) ? raw
    : raw && typeof raw === 'object'
      ? ((raw as { items?: unknown }).items ?? (raw as { instances?: unknown }).instances ?? []) as unknown[]
      : [];
  if (!Array.isArray(list)) return [];
  const out: EngineInstance[] = [];
  for (const it of list) {
    if (typeof it === 'string') {
      out.push({ instance_id: it, pods: 0, extra: {} });
      continue;
    }
    if (!it || typeof it !== 'object') continue;
    const o = it as Record<string, unknown>;
    const id = o.instance_id ?? o.instanceId ?? o.id;
    if (typeof id !== 'string' || !id) continue;
    const pods = Array.isArray(o.pods) ? o.pods.length : num(o.pods) ?? num(o.pod_count) ?? 0;
    const group = typeof o.instance_group === 'string' ? o.instance_group : typeof o.group === 'string' ? o.group : undefined;
    const known = ['instance_id', 'instanceId', 'id', 'pods', 'pod_count', 'instance_group', 'group', 'visible_pods',
      'uncertain_pods', 'registered'];
    const extra: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(o)) {
      if (!known.includes(k)) extra[k] = v;
    }
    out.push({ instance_id: id, pods, group, extra, visible_pods: num(o.visible_pods), uncertain_pods: num(o.uncertain_pods),
      registered: typeof o.registered === 'boolean' ? o.registered : undefined });
  }
  return out.sort((a, b) => a.instance_id.localeCompare(b.instance_id));
}

/** Tolerant reading of one instance's cache view: missing lists and maps become empty ones. */
export function normaliseEngineCache(raw: unknown, id: string): EngineCache {
  const o = (raw && typeof raw === 'object' ? raw : {}) as Record<string, unknown>;
  const pods = (Array.isArray(o.pods) ? o.pods : []).filter((p): p is Record<string, unknown> => !!p && typeof p === 'object')
    .map((p) => {
      const tiers: Record<string, number> = {};
      if (p.tiers && typeof p.tiers === 'object') {
        for (const [t, n] of Object.entries(p.tiers as Record<string, unknown>)) {
          const v = num(n);
          if (v !== undefined) tiers[t] = v;
        }
      }
      return {
        pod: String(p.pod ?? p.pod_id ?? '?'),
        source: typeof p.source === 'string' ? p.source : undefined,
        visible: typeof p.visible === 'boolean' ? p.visible : true,
        state: typeof p.state === 'string' ? p.state : undefined,
        tiers,
        last_event_at: typeof p.last_event_at === 'string' ? p.last_event_at : null,
        last_seq: num(p.last_seq) ?? null,
      } satisfies EnginePod;
    });
  const pool = o.pool && typeof o.pool === 'object' && num((o.pool as { keys?: unknown }).keys) !== undefined
    ? { keys: (o.pool as { keys: number }).keys } : undefined;
  let router: RouterStats | undefined;
  if (o.router && typeof o.router === 'object') {
    const r = o.router as Record<string, unknown>;
    const rate = (v: unknown) => num(v) ?? null;
    router = {
      queries: num(r.queries) ?? 0,
      prompt_blocks: num(r.prompt_blocks) ?? 0,
      routed_hit_blocks: num(r.routed_hit_blocks) ?? 0,
      routed_hit_rate: rate(r.routed_hit_rate),
      random_hit_rate: rate(r.random_hit_rate),
      pool_hit_rate: rate(r.pool_hit_rate),
      series: (Array.isArray(r.series) ? r.series : [])
        .filter((p): p is Record<string, unknown> => !!p && typeof p === 'object' && typeof (p as { minute?: unknown }).minute === 'string')
        .map((p) => ({
          minute: p.minute as string,
          queries: num(p.queries) ?? 0,
          routed_hit_rate: rate(p.routed_hit_rate),
          random_hit_rate: rate(p.random_hit_rate),
          pool_hit_rate: rate(p.pool_hit_rate),
        })),
    };
  }
  return { instance_id: typeof o.instance_id === 'string' ? o.instance_id : id, pods, pool, router };
}

type Opts<T> = Omit<UseQueryOptions<T, Error, T, readonly unknown[]>, 'queryKey' | 'queryFn'>;

export const engineKeys = {
  instances: ['engine', 'instances'] as const,
  cache: (id: string) => ['engine', 'instances', id, 'cache'] as const,
};

export function useEngineInstances(opts: Opts<EngineInstance[]> = {}) {
  return useQuery({
    queryKey: engineKeys.instances,
    queryFn: ({ signal }) => api.get<unknown>('/api/v1/meta/engine/instances', signal).then(normaliseEngineInstances),
    refetchInterval: LIVE_MS,
    ...opts,
  });
}

export function useEngineCache(id: string, opts: Opts<EngineCache> = {}) {
  return useQuery({
    queryKey: engineKeys.cache(id),
    queryFn: ({ signal }) => api.get<unknown>(`/api/v1/meta/engine/instances/${encodeURIComponent(id)}/cache`, signal)
      .then((r) => normaliseEngineCache(r, id)),
    refetchInterval: LIVE_MS,
    ...opts,
  });
}

/** The body of a score request, written by hand so block keys keep all their 64 bits (no JSON.stringify of a number). */
export function scoreBody(req: ScoreRequest): string {
  const parts = [`"instance_id":${JSON.stringify(req.instance_id)}`];
  if (req.token_ids) parts.push(`"token_ids":${JSON.stringify(req.token_ids)}`);
  if (req.block_keys) {
    if (!req.block_keys.every((k) => /^-?\d{1,20}$/.test(k))) throw new Error('block keys must be decimal integers');
    parts.push(`"block_keys":[${req.block_keys.join(',')}]`);
  }
  if (req.tier_weights && Object.keys(req.tier_weights).length > 0) {
    parts.push(`"tier_weights":${JSON.stringify(req.tier_weights)}`);
  }
  return `{${parts.join(',')}}`;
}

export function scorePrompt(req: ScoreRequest): Promise<ScoreResponse> {
  return request<ScoreResponse>('/api/v1/meta/engine/scores', {
    method: 'POST', rawBody: scoreBody(req), contentType: 'application/json',
  });
}
