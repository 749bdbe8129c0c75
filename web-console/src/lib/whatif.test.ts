import { describe, expect, it } from 'vitest';
import { buildWhatIfRequest, logTicks, quotaBytes, smallestQuotaText, whatIfChartData } from './whatif';

describe('what-if chart data', () => {
  const results = [
    { policy: 'LFU', capacityTokens: 3_000_000, capacityBlocks: 5859, hitRate: 0.35 },
    { policy: 'LRU', capacityTokens: 3_000_000, capacityBlocks: 5859, hitRate: 0.33 },
    { policy: 'LRU', capacityTokens: 1_000_000, capacityBlocks: 1953, hitRate: 0.31 },
    { policy: 'LFU', capacityTokens: 1_000_000, capacityBlocks: 1953, hitRate: 0.29 },
    { policy: 'PREFIX_LRU', capacityTokens: 0, capacityBlocks: 0, hitRate: 0 },
  ];
  it('gives one line per policy in a stable order, sorted by capacity, without zero capacities (log axis)', () => {
    const d = whatIfChartData(results, { hitRate: 0.5 });
    expect(d.series.map((s) => s.policy)).toEqual(['LRU', 'LFU']);
    expect(d.series[0].points.map((p) => [p.x, p.y])).toEqual([[1_000_000, 0.31], [3_000_000, 0.33]]);
    expect(d.xDomain).toEqual([1_000_000, 3_000_000]);
  });
  it('draws the unbounded ceiling across the whole x range', () => {
    expect(whatIfChartData(results, { hitRate: 0.5 }).ceiling).toEqual([{ x: 1_000_000, y: 0.5 }, { x: 3_000_000, y: 0.5 }]);
    expect(whatIfChartData(results, null).ceiling).toBeNull();
    expect(whatIfChartData([], { hitRate: 0.5 })).toEqual({ series: [], ceiling: null, xDomain: null });
  });
});

describe('smallest quota', () => {
  it('tells tokens, blocks and bytes', () => {
    const s = { policy: 'LRU', hitRate: 0.3, reached: true, capacityTokens: 1_000_000, capacityBlocks: 1953 };
    expect(smallestQuotaText(s, 1_048_576)).toBe(
      'Smallest quota that reaches 30 % with LRU: 1,000,000 tokens = 1,953 blocks ≈ 1.91 GiB (2,047,868,928 bytes)');
    expect(quotaBytes(1953, 1_048_576)).toBe(2_047_868_928);
    expect(smallestQuotaText({ ...s, achievedHitRate: 0.3042 }, 1_048_576)).toMatch(/bytes\) \(hit rate there: 30.42 %\)$/);
  });
  it('says when the bytes per block are unknown', () => {
    const s = { policy: 'LFU', hitRate: 0.425, reached: true, capacityTokens: 5000, capacityBlocks: 10 };
    expect(smallestQuotaText(s, null)).toMatch(/42.5 % with LFU: 5,000 tokens = 10 blocks ≈ bytes unknown/);
  });
  it('says when the target is not reached in the range', () => {
    const s = { policy: 'TTL', hitRate: 0.9, reached: false, capacityTokens: null, capacityBlocks: null };
    expect(smallestQuotaText(s, 1024)).toBe('TTL does not reach 90 % within the capacities tried; try a larger maximum.');
    expect(smallestQuotaText(null)).toMatch(/No target/);
  });
});

describe('what-if request', () => {
  const form = { trace: 'conversation', policies: ['LRU', 'LFU'], min: '100K', max: '1G', points: '8', waterPercent: '90',
    targetPercent: '30', targetPolicy: 'LRU' };
  it('builds a capacity range in tokens, water and target as fractions', () => {
    expect(buildWhatIfRequest(form).request).toEqual({
      trace: 'conversation', policies: ['LRU', 'LFU'], capacityRange: { min: 100_000, max: 1_000_000_000, points: 8 },
      water: 0.9, target: { policy: 'LRU', hitRate: 0.3 },
    });
    expect(buildWhatIfRequest({ ...form, targetPercent: '' }).request?.target).toBeUndefined();
  });
  it('refuses a bad range before sending', () => {
    const r = buildWhatIfRequest({ ...form, min: '1M', max: '10K', points: '0', policies: [], waterPercent: '150', trace: '' });
    expect(r.request).toBeUndefined();
    expect(Object.keys(r.errors).sort()).toEqual(['max', 'points', 'policies', 'trace', 'waterPercent']);
  });
});

describe('log axis ticks', () => {
  it('uses 1-2-5 steps over a short range and whole decades over a long one', () => {
    expect(logTicks(100_000, 1_000_000)).toEqual([100_000, 200_000, 500_000, 1_000_000]);
    expect(logTicks(100_000, 100_000_000)).toEqual([100_000, 1_000_000, 10_000_000, 100_000_000]);
    expect(logTicks(3000, 4000)).toEqual([3000, 4000]);
    expect(logTicks(0, 10)).toEqual([]);
  });
});
