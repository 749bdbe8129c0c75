// One TanStack Query hook per resource. Query keys carry every parameter; live numbers refetch on an interval.
import { useQuery, type UseQueryOptions } from '@tanstack/react-query';
import { api, qs, requestWithEtag } from './client';
import type {
  Account, Group, Instance, MetaInstance, Page, Services, StatsSeries, StatsSummary, Storage, Trace, UsageSeries,
  WhatIfRun,
} from './types';

export const LIVE_MS = 10_000;
export const SERIES_MS = 30_000;
const PAGE = 500; // the control plane's Page.MAX_SIZE

export type Range = '1h' | '6h' | '24h' | '7d' | '30d';
export const RANGES: { value: Range; label: string; ms: number; step: string }[] = [
  { value: '1h', label: 'Last hour', ms: 3600_000, step: '1m' },
  { value: '6h', label: 'Last 6 hours', ms: 6 * 3600_000, step: '5m' },
  { value: '24h', label: 'Last day', ms: 24 * 3600_000, step: '15m' },
  { value: '7d', label: 'Last 7 days', ms: 7 * 24 * 3600_000, step: '1h' },
  { value: '30d', label: 'Last 30 days', ms: 30 * 24 * 3600_000, step: '6h' },
];

export function rangeParams(range: Range, now = Date.now()): { since: string; until: string; step: string } {
  const r = RANGES.find((x) => x.value === range) ?? RANGES[0];
  return { since: new Date(now - r.ms).toISOString(), until: new Date(now).toISOString(), step: r.step };
}

type Opts<T> = Omit<UseQueryOptions<T, Error, T, readonly unknown[]>, 'queryKey' | 'queryFn'>;

export const keys = {
  services: ['services'] as const,
  summary: ['stats', 'summary'] as const,
  statsSeries: (p: { group?: string; instance?: string; range: Range }) => ['stats', 'series', p] as const,
  usageSeries: (p: { group?: string; range: Range }) => ['usage', 'series', p] as const,
  groups: ['instance-groups'] as const,
  group: (name: string) => ['instance-groups', name] as const,
  instances: (p: { group?: string }) => ['instances', p] as const,
  instance: (id: string) => ['instance', id] as const,
  metaInstance: (id: string) => ['meta', 'instances', id] as const,
  storages: ['storages'] as const,
  storage: (name: string) => ['storages', name] as const,
  accounts: ['accounts'] as const,
  account: (name: string) => ['accounts', name] as const,
  traces: ['whatif', 'traces'] as const,
  runs: ['whatif', 'runs'] as const,
  run: (id: string) => ['whatif', 'runs', id] as const,
};

export function useServices(opts: Opts<Services> = {}) {
  return useQuery({
    queryKey: keys.services,
    queryFn: ({ signal }) => api.get<Services>('/api/v1/services', signal),
    refetchInterval: LIVE_MS,
    ...opts,
  });
}

export function useStatsSummary(opts: Opts<StatsSummary> = {}) {
  return useQuery({
    queryKey: keys.summary,
    queryFn: ({ signal }) => api.get<StatsSummary>('/api/v1/stats/summary', signal),
    refetchInterval: LIVE_MS,
    ...opts,
  });
}

export function statsSeriesQuery(p: { group?: string; instance?: string; range: Range }) {
  return {
    queryKey: keys.statsSeries(p),
    queryFn: ({ signal }: { signal: AbortSignal }) =>
      api.get<StatsSeries>(`/api/v1/stats/series${qs({ group: p.group, instance: p.instance, ...rangeParams(p.range) })}`,
        signal),
    refetchInterval: SERIES_MS,
  };
}

export function useStatsSeries(p: { group?: string; instance?: string; range: Range }, opts: Opts<StatsSeries> = {}) {
  return useQuery({ ...statsSeriesQuery(p), ...opts });
}

export function useUsageSeries(p: { group?: string; range: Range }, opts: Opts<UsageSeries> = {}) {
  return useQuery({
    queryKey: keys.usageSeries(p),
    queryFn: ({ signal }) =>
      api.get<UsageSeries>(`/api/v1/usage/series${qs({ group: p.group, ...rangeParams(p.range) })}`, signal),
    refetchInterval: SERIES_MS,
    ...opts,
  });
}

export function useGroups(opts: Opts<Page<Group>> = {}) {
  return useQuery({
    queryKey: keys.groups,
    queryFn: ({ signal }) => api.get<Page<Group>>(`/api/v1/instance-groups${qs({ size: PAGE })}`, signal),
    refetchInterval: LIVE_MS,
    ...opts,
  });
}

export function fetchGroup(name: string) {
  return requestWithEtag<Group>(`/api/v1/instance-groups/${encodeURIComponent(name)}`);
}

export function useGroup(name: string, opts: Opts<{ data: Group; etag: string | null }> = {}) {
  return useQuery({ queryKey: keys.group(name), queryFn: () => fetchGroup(name), ...opts });
}

export function useInstances(p: { group?: string } = {}, opts: Opts<Page<Instance>> = {}) {
  return useQuery({
    queryKey: keys.instances(p),
    queryFn: ({ signal }) => api.get<Page<Instance>>(`/api/v1/instances${qs({ group: p.group, size: PAGE })}`, signal),
    ...opts,
  });
}

export function useInstance(id: string, opts: Opts<Instance> = {}) {
  return useQuery({
    queryKey: keys.instance(id),
    queryFn: ({ signal }) => api.get<Instance>(`/api/v1/instances/${encodeURIComponent(id)}`, signal),
    ...opts,
  });
}

export function fetchMetaInstance(id: string, signal?: AbortSignal) {
  return api.get<MetaInstance>(`/api/v1/meta/instances/${encodeURIComponent(id)}`, signal);
}

export function useMetaInstance(id: string, opts: Opts<MetaInstance> = {}) {
  return useQuery({
    queryKey: keys.metaInstance(id),
    queryFn: ({ signal }) => fetchMetaInstance(id, signal),
    refetchInterval: LIVE_MS,
    ...opts,
  });
}

export function useStorages(opts: Opts<Page<Storage>> = {}) {
  return useQuery({
    queryKey: keys.storages,
    queryFn: ({ signal }) => api.get<Page<Storage>>(`/api/v1/storages${qs({ size: PAGE })}`, signal),
    ...opts,
  });
}

export function fetchStorage(name: string) {
  return requestWithEtag<Storage>(`/api/v1/storages/${encodeURIComponent(name)}`);
}

export function useAccounts(opts: Opts<Page<Account>> = {}) {
  return useQuery({
    queryKey: keys.accounts,
    queryFn: ({ signal }) => api.get<Page<Account>>(`/api/v1/accounts${qs({ size: PAGE })}`, signal),
    ...opts,
  });
}

export function fetchAccount(name: string) {
  return requestWithEtag<Account>(`/api/v1/accounts/${encodeURIComponent(name)}`);
}

export function useTraces(opts: Opts<Trace[]> = {}) {
  return useQuery({
    queryKey: keys.traces,
    queryFn: ({ signal }) => api.get<Trace[]>('/api/v1/meta/whatif/traces', signal),
    ...opts,
  });
}

export function useRuns(opts: Opts<WhatIfRun[]> = {}) {
  return useQuery({
    queryKey: keys.runs,
    queryFn: ({ signal }) => api.get<WhatIfRun[] | { items: WhatIfRun[] }>('/api/v1/meta/whatif/runs', signal)
      .then((r) => (Array.isArray(r) ? r : r?.items ?? [])),
    refetchInterval: 5_000,
    ...opts,
  });
}

export function isRunActive(state: string | undefined): boolean {
  return state === 'queued' || state === 'running';
}

export function useRun(id: string | undefined, opts: Opts<WhatIfRun> = {}) {
  return useQuery({
    queryKey: keys.run(id ?? ''),
    queryFn: ({ signal }) => api.get<WhatIfRun>(`/api/v1/meta/whatif/runs/${encodeURIComponent(id ?? '')}`, signal),
    enabled: !!id,
    refetchInterval: (q) => (q.state.status === 'error' ? false
      : isRunActive(q.state.data?.state) || !q.state.data ? 500 : false),
    ...opts,
  });
}
