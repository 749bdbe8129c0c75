import { describe, expect, it } from 'vitest';
import type { EnginePod } from '../api/engine';
import { normaliseEngineCache, normaliseEngineInstances, scoreBody } from '../api/engine';
import { parseBlockKeys, parseTierWeights, podTiers, routerSeries, tierOrder, tierTotals } from './engine';

const pods: EnginePod[] = [
  { pod: 'a', visible: true, state: 'live', tiers: { cpu: 5, gpu: 10 } },
  { pod: 'b', visible: false, state: 'uncertain', tiers: { gpu: 3, disk: 7 } },
];

describe('engine tiers', () => {
  it('orders device, host, then the rest by name', () => {
    expect(tierOrder(['disk', 'cpu', 'zeta', 'gpu', 'alpha'])).toEqual(['gpu', 'cpu', 'disk', 'alpha', 'zeta']);
    expect(podTiers(pods)).toEqual(['gpu', 'cpu', 'disk']);
  });

  it('sums tiers over every pod, or only over the pods the router uses', () => {
    expect(tierTotals(pods)).toEqual({ gpu: 13, cpu: 5, disk: 7 });
    expect(tierTotals(pods, true)).toEqual({ gpu: 10, cpu: 5 });
    expect(tierTotals([])).toEqual({});
  });

  it('drops minutes without queries from the router series', () => {
    const s = routerSeries([
      { minute: '2026-11-27T10:00:00Z', queries: 4, routed_hit_rate: 0.9, random_hit_rate: 0.3, pool_hit_rate: 0.5 },
      { minute: '2026-11-27T10:01:00Z', queries: 0, routed_hit_rate: null, random_hit_rate: null, pool_hit_rate: null },
      { minute: '2026-11-27T10:02:00Z', queries: 2, routed_hit_rate: 1, random_hit_rate: null, pool_hit_rate: 0 },
    ]);
    expect(s.map((x) => x.name)).toEqual(['prefix-aware router', 'random pod', 'pool']);
    expect(s[0].points.map((p) => p.y)).toEqual([0.9, 1]);
    expect(s[1].points.map((p) => p.y)).toEqual([0.3]);
    expect(s[2].points.map((p) => p.y)).toEqual([0.5, 0]);
  });
});

describe('tolerant reading of the engine endpoints', () => {
  it('reads a bare list, a wrapped list, pods as a count or a list', () => {
    expect(normaliseEngineInstances([{ instance_id: 'b', pods: 2 }, { instance_id: 'a', pods: [{}, {}, {}] }, { nope: 1 }, 'c']))
      .toMatchObject([{ instance_id: 'a', pods: 3 }, { instance_id: 'b', pods: 2 }, { instance_id: 'c', pods: 0 }]);
    expect(normaliseEngineInstances({ items: [{ instanceId: 'x', pod_count: 1, group: 'g' }] }))
      .toMatchObject([{ instance_id: 'x', pods: 1, group: 'g' }]);
    expect(normaliseEngineInstances(null)).toEqual([]);
  });

  it('fills missing parts of a cache view and keeps hidden pods hidden', () => {
    const c = normaliseEngineCache({ pods: [{ pod: 'p', visible: false, tiers: { gpu: 2, bad: 'x' } }] }, 'i1');
    expect(c.instance_id).toBe('i1');
    expect(c.pods[0]).toMatchObject({ pod: 'p', visible: false, tiers: { gpu: 2 }, last_seq: null, last_event_at: null });
    expect(c.router).toBeUndefined();
    expect(c.pool).toBeUndefined();
    expect(normaliseEngineCache({ router: { queries: 1, series: [{ minute: 'm' }, 5] } }, 'i').router?.series).toHaveLength(1);
  });
});

describe('score form parsing', () => {
  it('keeps all 64 bits of block keys and writes them verbatim', () => {
    const keys = parseBlockKeys('18446744073709551615, -9223372036854775808 0x10\n42');
    expect(keys).toEqual(['18446744073709551615', '-9223372036854775808', '16', '42']);
    expect(parseBlockKeys('[18446744073709551615, "7"]')).toEqual(['18446744073709551615', '7']);
    expect(parseBlockKeys('{"block_keys": [1, 2]}')).toEqual(['1', '2']);
    expect(scoreBody({ instance_id: 'i"1', block_keys: keys, tier_weights: { gpu: 1 } }))
      .toBe('{"instance_id":"i\\"1","block_keys":[18446744073709551615,-9223372036854775808,16,42],"tier_weights":{"gpu":1}}');
    expect(JSON.parse(scoreBody({ instance_id: 'i', token_ids: [1, 2] }))).toEqual({ instance_id: 'i', token_ids: [1, 2] });
  });

  it('refuses keys that are not 64-bit integers, naming the first bad one', () => {
    expect(() => parseBlockKeys('')).toThrow(/at least one/);
    expect(() => parseBlockKeys('1, x2')).toThrow(/block key 2 \('x2'\)/);
    expect(() => parseBlockKeys('18446744073709551616')).toThrow(/64 bits/);
    expect(() => parseBlockKeys('-9223372036854775809')).toThrow(/64 bits/);
    expect(() => parseBlockKeys('[1,')).toThrow(/not valid JSON/);
    expect(() => parseBlockKeys('{"keys": [1]}')).toThrow(/array of block keys/);
    expect(() => scoreBody({ instance_id: 'i', block_keys: ['1]'] })).toThrow();
  });

  it('reads tier weights as pairs or JSON and refuses bad ones', () => {
    expect(parseTierWeights('')).toBeUndefined();
    expect(parseTierWeights('gpu=1, cpu: 0.8')).toEqual({ gpu: 1, cpu: 0.8 });
    expect(parseTierWeights('{"gpu": 2, "disk": 0}')).toEqual({ gpu: 2, disk: 0 });
    expect(() => parseTierWeights('gpu')).toThrow(/tier=weight/);
    expect(() => parseTierWeights('gpu=-1')).toThrow(/≥ 0/);
    expect(() => parseTierWeights('gpu=x')).toThrow(/≥ 0/);
    expect(() => parseTierWeights('g#pu=1')).toThrow(/letters, digits/);
    expect(() => parseTierWeights('host mem=1')).toThrow(/letters, digits/);
    expect(parseTierWeights('GPU_0.a-b=1')).toEqual({ 'GPU_0.a-b': 1 });
    expect(() => parseTierWeights(Array.from({ length: 65 }, (_, i) => `t${i}=1`).join(','))).toThrow(/at most 64 tiers/);
    expect(() => parseTierWeights('gpu=1, gpu=2')).toThrow(/twice/);
    expect(() => parseTierWeights('[1]')).toThrow(/tier=weight|object/);
  });
});
