// What-if capacity: request building, chart data and the "smallest quota" sentence.
import type { WhatIfResult, WhatIfRun, WhatIfSmallest } from '../api/types';
import { formatBytes, formatCount } from './format';
import { parseCount } from './validation';

export interface CurvePoint {
  x: number; // capacity in tokens
  y: number; // hit rate 0..1
  blocks: number;
  policy: string;
}

export interface WhatIfChartData {
  series: { policy: string; points: CurvePoint[] }[];
  /** The unbounded (infinite capacity) hit rate, as a flat line across the x range; null when unknown. */
  ceiling: { x: number; y: number }[] | null;
  xDomain: [number, number] | null;
}

const POLICY_ORDER = ['LRU', 'LFU', 'TTL', 'PREFIX_LRU'];

/** One line per policy (in the order LRU, LFU, TTL, PREFIX_LRU, then others), points sorted by capacity. */
export function whatIfChartData(results: WhatIfResult[] | undefined, ceiling?: { hitRate: number } | null): WhatIfChartData {
  const by = new Map<string, CurvePoint[]>();
  for (const r of results ?? []) {
    if (!(r.capacityTokens > 0) || !Number.isFinite(r.hitRate)) {
      continue; // a log axis has no place for 0
    }
    const list = by.get(r.policy) ?? [];
    list.push({ x: r.capacityTokens, y: r.hitRate, blocks: r.capacityBlocks, policy: r.policy });
    by.set(r.policy, list);
  }
  const rank = (p: string) => {
    const i = POLICY_ORDER.indexOf(p);
    return i < 0 ? POLICY_ORDER.length : i;
  };
  const series = [...by.entries()]
    .sort((a, b) => rank(a[0]) - rank(b[0]) || a[0].localeCompare(b[0]))
    .map(([policy, points]) => ({ policy, points: points.sort((a, b) => a.x - b.x) }));
  const xs = series.flatMap((s) => s.points.map((p) => p.x));
  const xDomain: [number, number] | null = xs.length ? [Math.min(...xs), Math.max(...xs)] : null;
  const c = ceiling && Number.isFinite(ceiling.hitRate) && xDomain
    ? [{ x: xDomain[0], y: ceiling.hitRate }, { x: xDomain[1], y: ceiling.hitRate }]
    : null;
  return { series, ceiling: c, xDomain };
}

/** Bytes of a quota holding `blocks` blocks of `bytesPerBlock` bytes each; null when either is unknown. */
export function quotaBytes(blocks: number | null | undefined, bytesPerBlock: number | null | undefined): number | null {
  if (blocks === null || blocks === undefined || !bytesPerBlock || bytesPerBlock <= 0) {
    return null;
  }
  return blocks * bytesPerBlock;
}

/**
 * "Smallest quota that reaches 30 % with LRU: 1,000,000 tokens = 1,953 blocks ≈ 1.86 GiB (2,000,000,000 bytes)",
 * or why there is none within the range tried.
 */
export function smallestQuotaText(s: WhatIfSmallest | null | undefined, bytesPerBlock?: number | null): string {
  if (!s) {
    return 'No target hit rate was set for this run.';
  }
  const pct = `${+(s.hitRate * 100).toFixed(2)} %`;
  if (!s.reached || s.capacityTokens === null || s.capacityBlocks === null) {
    return `${s.policy} does not reach ${pct} within the capacities tried; try a larger maximum.`;
  }
  const b = quotaBytes(s.capacityBlocks, bytesPerBlock);
  const bytes = b === null ? 'bytes unknown (set bytes per block)' : `${formatBytes(b)} (${formatCount(b)} bytes)`;
  const got = typeof s.achievedHitRate === 'number' ? ` (hit rate there: ${+(s.achievedHitRate * 100).toFixed(2)} %)` : '';
  return `Smallest quota that reaches ${pct} with ${s.policy}: ${formatCount(s.capacityTokens)} tokens = `
    + `${formatCount(s.capacityBlocks)} blocks ≈ ${bytes}${got}`;
}

export interface WhatIfForm {
  trace: string;
  policies: string[];
  min: string;
  max: string;
  points: string;
  waterPercent: string;
  targetPercent: string;
  targetPolicy: string;
}

export type WhatIfErrors = Partial<Record<keyof WhatIfForm, string>>;

/** Checks the form; errors by field, or the request to POST. */
export function buildWhatIfRequest(f: WhatIfForm):
  { errors: WhatIfErrors; request?: import('../api/types').WhatIfRequest } {
  const errors: WhatIfErrors = {};
  if (!f.trace) errors.trace = 'choose a trace';
  if (f.policies.length === 0) errors.policies = 'tick at least one policy';
  const min = parseCount(f.min);
  const max = parseCount(f.max);
  if (min === null || min <= 0) errors.min = 'a positive number of tokens, e.g. 100K';
  if (max === null || max <= 0) errors.max = 'a positive number of tokens, e.g. 100M';
  if (min !== null && max !== null && min > 0 && max > 0 && max < min) errors.max = 'must be at least the minimum';
  const points = Number(f.points);
  if (!Number.isInteger(points) || points < 1 || points > 64) errors.points = 'a whole number from 1 to 64';
  if (min !== null && max !== null && min === max && points > 1) errors.points = 'one point when minimum = maximum';
  const water = Number(f.waterPercent);
  if (f.waterPercent.trim() === '' || !Number.isFinite(water) || water <= 0 || water > 100) {
    errors.waterPercent = 'a percentage above 0, at most 100';
  }
  let target: { policy: string; hitRate: number } | undefined;
  if (f.targetPercent.trim() !== '') {
    const t = Number(f.targetPercent);
    if (!Number.isFinite(t) || t <= 0 || t > 100) {
      errors.targetPercent = 'a percentage above 0, at most 100 (or empty)';
    } else if (!f.targetPolicy) {
      errors.targetPolicy = 'choose the policy the target is for';
    } else {
      target = { policy: f.targetPolicy, hitRate: t / 100 };
    }
  }
  if (Object.keys(errors).length) {
    return { errors };
  }
  return {
    errors,
    request: {
      trace: f.trace,
      policies: f.policies,
      capacityRange: { min: min as number, max: max as number, points },
      water: water / 100,
      ...(target ? { target } : {}),
    },
  };
}

export function runFraction(run: WhatIfRun | undefined): number {
  const f = run?.progress?.fraction;
  if (run?.state === 'done') return 1;
  return typeof f === 'number' && Number.isFinite(f) ? Math.max(0, Math.min(1, f)) : 0;
}

/** Tick values for a log axis over [lo, hi]: 1-2-5 steps per decade, or whole decades when that is too many. */
export function logTicks(lo: number, hi: number): number[] {
  if (!(lo > 0) || !(hi >= lo)) return [];
  const out: number[] = [];
  for (let e = Math.floor(Math.log10(lo)); e <= Math.ceil(Math.log10(hi)); e++) {
    for (const m of [1, 2, 5]) {
      const v = m * 10 ** e;
      if (v >= lo * 0.999 && v <= hi * 1.001) out.push(v);
    }
  }
  if (out.length > 8) {
    const decades = out.filter((v) => Math.abs(Math.log10(v) - Math.round(Math.log10(v))) < 1e-9);
    return decades.length >= 2 ? decades : out.filter((_, i) => i % 3 === 0);
  }
  return out.length >= 2 ? out : [lo, hi];
}
