// Pure helpers of the engine-caches page: tier order and totals, the router's series, and the score form's parsing.
import type { EnginePod, RouterPoint } from '../api/engine';
import type { Series } from './series';

const TIER_ORDER = ['gpu', 'hbm', 'cpu', 'memory', 'mem', 'host', 'disk', 'storage'];

/** Engine tiers as the engines name them, device first (gpu), then host memory (cpu), then the rest by name. */
export function tierOrder(tiers: Iterable<string>): string[] {
  const rank = (t: string) => {
    const i = TIER_ORDER.indexOf(t.toLowerCase());
    return i < 0 ? TIER_ORDER.length : i;
  };
  return [...new Set(tiers)].sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
}

/** A short human name for a tier column. */
export function tierLabel(t: string): string {
  switch (t.toLowerCase()) {
    case 'gpu':
    case 'hbm':
      return `Engine GPU (${t})`;
    case 'cpu':
    case 'memory':
    case 'mem':
    case 'host':
      return `Engine host (${t})`;
    default:
      return `Engine ${t}`;
  }
}

export function podTiers(pods: EnginePod[]): string[] {
  return tierOrder(pods.flatMap((p) => Object.keys(p.tiers)));
}

/** Blocks per tier summed over the pods (all of them, or only those the router uses). */
export function tierTotals(pods: EnginePod[], onlyVisible = false): Record<string, number> {
  const out: Record<string, number> = {};
  for (const p of pods) {
    if (onlyVisible && p.visible === false) continue;
    for (const [t, n] of Object.entries(p.tiers)) {
      out[t] = (out[t] ?? 0) + n;
    }
  }
  return out;
}

export function podTotal(p: EnginePod): number {
  return Object.values(p.tiers).reduce((a, b) => a + b, 0);
}

/** The three per-minute rates as chart series; a minute without queries has no point. */
export function routerSeries(points: RouterPoint[]): Series[] {
  const line = (name: string, pick: (p: RouterPoint) => number | null) => ({
    name,
    points: points.filter((p) => p.queries > 0 && pick(p) !== null && Number.isFinite(pick(p)))
      .map((p) => ({ x: new Date(p.minute), y: pick(p), name })),
  });
  return [
    line('prefix-aware router', (p) => p.routed_hit_rate),
    line('random pod', (p) => p.random_hit_rate),
    line('pool', (p) => p.pool_hit_rate),
  ];
}

export const MAX_SCORE_ITEMS = 131_072;
/** The metadata plane's bound on tier_weights (EngineScoresResource.MAX_TIERS). */
export const MAX_TIERS = 64;
const U64_MAX = (1n << 64n) - 1n;
const I64_MIN = -(1n << 63n);

/**
 * Block keys as typed: comma/space/line separated or a JSON array (of numbers or strings) or {"block_keys": [...]};
 * decimal 64-bit integers (signed as KVCM writes them, or unsigned as vLLM does), or 0x-prefixed hex. Returned as
 * decimal strings, since a JS number keeps only 53 bits.
 */
export function parseBlockKeys(raw: string): string[] {
  const t = raw.trim();
  if (!t) throw new Error('enter at least one block key');
  let items: string[];
  if (t.startsWith('[') || t.startsWith('{')) {
    // keep the digits of large numbers: quote every bare number before JSON.parse
    let j: unknown;
    try {
      j = JSON.parse(t.replace(/(-?\b\d+\b)(?=\s*[,\]])/g, '"$1"'));
    } catch (e) {
      throw new Error(`not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
    const arr = Array.isArray(j) ? j
      : j && typeof j === 'object' && Array.isArray((j as { block_keys?: unknown }).block_keys)
        ? (j as { block_keys: unknown[] }).block_keys : null;
    if (!arr) throw new Error('JSON must be an array of block keys or {"block_keys": [...]}');
    items = arr.map((v) => String(v));
  } else {
    items = t.split(/[\s,;]+/).filter((x) => x !== '');
  }
  if (items.length === 0) throw new Error('enter at least one block key');
  if (items.length > MAX_SCORE_ITEMS) {
    throw new Error(`at most ${MAX_SCORE_ITEMS.toLocaleString('en-US')} block keys, got ${items.length.toLocaleString('en-US')}`);
  }
  return items.map((s, i) => {
    const v = s.trim();
    let n: bigint;
    if (/^0x[0-9a-f]{1,16}$/i.test(v)) {
      n = BigInt(v);
    } else if (/^-?\d{1,20}$/.test(v)) {
      n = BigInt(v);
    } else {
      throw new Error(`block key ${i + 1} ('${v.slice(0, 24)}') is not a decimal or 0x-hex integer`);
    }
    if (n < I64_MIN || n > U64_MAX) throw new Error(`block key ${i + 1} ('${v.slice(0, 24)}') does not fit in 64 bits`);
    return n.toString();
  });
}

/**
 * Tier weights as "gpu=1, cpu=0.8" (or ':' instead of '='), or a JSON object; empty means the server's defaults
 * (llm-d's: gpu 1.0, cpu 0.8). Tier names as the metadata plane accepts them (EngineSource.tierProblem): 1–64 letters,
 * digits, '_', '-' and '.'.
 */
export function parseTierWeights(raw: string): Record<string, number> | undefined {
  const t = raw.trim();
  if (!t) return undefined;
  let pairs: [string, unknown][];
  if (t.startsWith('{')) {
    let j: unknown;
    try {
      j = JSON.parse(t);
    } catch (e) {
      throw new Error(`not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (!j || typeof j !== 'object' || Array.isArray(j)) throw new Error('JSON must be an object {"gpu": 1, "cpu": 0.8}');
    pairs = Object.entries(j as Record<string, unknown>);
  } else {
    pairs = t.split(/[,;\n]+/).map((s) => s.trim()).filter((s) => s !== '').map((s) => {
      const m = /^([^=:]+)[=:](.*)$/.exec(s);
      if (!m) throw new Error(`'${s.slice(0, 30)}' is not tier=weight`);
      return [m[1].trim(), m[2].trim() === '' ? NaN : Number(m[2].trim())];
    });
  }
  if (pairs.length > MAX_TIERS) throw new Error(`at most ${MAX_TIERS} tiers, got ${pairs.length}`);
  const out: Record<string, number> = {};
  for (const [name, w] of pairs) {
    if (!/^[A-Za-z0-9_.-]{1,64}$/.test(name)) {
      throw new Error(`tier name '${name.slice(0, 30)}' must be 1–64 letters, digits, '_', '-' or '.'`);
    }
    if (typeof w !== 'number' || !Number.isFinite(w) || w < 0) {
      throw new Error(`weight of tier '${name}' must be a number ≥ 0`);
    }
    if (name in out) throw new Error(`tier '${name}' is given twice`);
    out[name] = w;
  }
  if (Object.keys(out).length === 0) return undefined;
  return out;
}
