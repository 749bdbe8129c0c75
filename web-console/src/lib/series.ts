// Pure transforms from the stats/usage series answers into chart data.
import type { StatsPoint, UsagePoint } from '../api/types';

export interface XY {
  x: Date;
  y: number | null;
  /** Label for tooltips. */
  name?: string;
}

export interface Series {
  name: string;
  points: XY[];
}

/** ISO-8601 duration (PT1M, PT1H, P1D, PT30S) or 1m/5m/1h/1d → seconds; 60 when unreadable. */
export function stepSeconds(step: string | undefined): number {
  if (!step) return 60;
  const short = /^(\d+)([smhd])$/.exec(step);
  if (short) {
    return Number(short[1]) * { s: 1, m: 60, h: 3600, d: 86400 }[short[2] as 's' | 'm' | 'h' | 'd'];
  }
  const m = /^P(?:(\d+)D)?(?:T(?:(\d+)H)?(?:(\d+)M)?(?:(\d+(?:\.\d+)?)S)?)?$/.exec(step);
  if (!m) return 60;
  const s = Number(m[1] ?? 0) * 86400 + Number(m[2] ?? 0) * 3600 + Number(m[3] ?? 0) * 60 + Number(m[4] ?? 0);
  return s > 0 ? s : 60;
}

/** Hit rate per bucket; buckets where nothing was queried have no point (hitRate null). */
export function hitRateSeries(points: StatsPoint[]): XY[] {
  return points
    .filter((p) => p.hitRate !== null && p.hitRate !== undefined && Number.isFinite(p.hitRate))
    .map((p) => ({ x: new Date(p.t), y: p.hitRate as number }));
}

/** Every eviction reason that occurs in the points, sorted. */
export function evictionReasons(points: { evictedBlocks?: Record<string, number> }[]): string[] {
  const s = new Set<string>();
  points.forEach((p) => Object.keys(p.evictedBlocks ?? {}).forEach((r) => s.add(r)));
  return [...s].sort();
}

/** Evicted blocks per minute by reason: each bucket's count divided by the bucket's length in minutes. */
export function evictionsPerMinute(points: StatsPoint[], step: string | undefined): Series[] {
  const minutes = stepSeconds(step) / 60;
  return evictionReasons(points).map((reason) => ({
    name: reason,
    points: points.map((p) => ({ x: new Date(p.t), y: (p.evictedBlocks?.[reason] ?? 0) / minutes, name: reason })),
  }));
}

/** Queries per bucket (for a throughput chart). */
export function querySeries(points: StatsPoint[]): XY[] {
  return points.map((p) => ({ x: new Date(p.t), y: p.queries }));
}

/** Used bytes per storage type over time; a type missing in a bucket counts 0 there (stack-friendly). */
export function usageByType(points: UsagePoint[]): Series[] {
  const types = new Set<string>();
  points.forEach((p) => Object.keys(p.byType ?? {}).forEach((t) => types.add(t)));
  return [...types].sort().map((t) => ({
    name: t,
    points: points.map((p) => ({ x: new Date(p.t), y: p.byType?.[t] ?? 0, name: t })),
  }));
}

/** Hit rate over a set of points: sum(hitBlocks) / sum(queriedBlocks), null when nothing was queried. */
export function overallHitRate(points: StatsPoint[]): number | null {
  const q = points.reduce((a, p) => a + (p.queriedBlocks ?? 0), 0);
  const h = points.reduce((a, p) => a + (p.hitBlocks ?? 0), 0);
  return q > 0 ? h / q : null;
}

/** Short reason names for legends: water_level → water level. */
export function reasonLabel(r: string): string {
  return r.replace(/_/g, ' ');
}
