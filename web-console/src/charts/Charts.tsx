// Every chart of the console, on PatternFly charts (Victory). Loaded only by the pages that draw them.
import { useEffect, useRef, useState, type ReactNode, type RefObject } from 'react';
import {
  Chart, ChartArea, ChartAxis, ChartBar, ChartDonutThreshold, ChartDonutUtilization, ChartGroup, ChartLine,
  ChartScatter, ChartStack, ChartThemeColor, ChartVoronoiContainer,
} from '@patternfly/react-charts/victory';
import { formatBytes, formatCompact, formatRate, shortTime } from '../lib/format';
import type { Series, XY } from '../lib/series';
import { reasonLabel } from '../lib/series';
import { logTicks, type WhatIfChartData } from '../lib/whatif';

/** Width of the element, following resizes (charts draw in SVG at a fixed size). */
export function useWidth(initial = 600): [RefObject<HTMLDivElement>, number] {
  const ref = useRef<HTMLDivElement>(null);
  const [width, setWidth] = useState(initial);
  useEffect(() => {
    const el = ref.current;
    if (!el) return undefined;
    const measure = () => {
      const w = el.clientWidth;
      if (w > 0) setWidth(w);
    };
    measure();
    if (typeof ResizeObserver === 'undefined') return undefined;
    const ro = new ResizeObserver(measure);
    ro.observe(el);
    return () => ro.disconnect();
  }, []);
  return [ref, width];
}

function NoData({ children, height }: { children: ReactNode; height: number }) {
  return (
    <div style={{ height, display: 'flex', alignItems: 'center', justifyContent: 'center',
      color: 'var(--pf-t--global--text--color--subtle)' }} data-testid="chart-no-data">
      {children}
    </div>
  );
}

function span(points: { x: Date }[]): number {
  if (points.length < 2) return 3600_000;
  return points[points.length - 1].x.getTime() - points[0].x.getTime();
}

/** Usage against quota with soft and hard water levels (percent of the quota). */
export function UsageGauge({ name, usedBytes, quotaBytes, softPercent, hardPercent }: {
  name: string; usedBytes: number; quotaBytes: number; softPercent: number; hardPercent: number;
}) {
  const pct = quotaBytes > 0 ? Math.min(100, (100 * usedBytes) / quotaBytes) : 0;
  return (
    <div style={{ height: 200, width: 230 }} data-testid={`usage-gauge-${name}`} data-used-percent={pct.toFixed(2)}>
      <ChartDonutThreshold
        ariaDesc={`Usage of group ${name}`}
        ariaTitle={`${name} usage`}
        constrainToVisibleArea
        data={[{ x: `Soft water level at ${softPercent}%`, y: softPercent },
          { x: `Hard water level at ${hardPercent}%`, y: hardPercent }]}
        height={200}
        width={230}
        labels={({ datum }: { datum: { x?: string } }) => (datum.x ? datum.x : null)}
        name={`gauge-${name}`}
      >
        <ChartDonutUtilization
          data={{ x: 'Used', y: pct }}
          labels={({ datum }: { datum: { x?: string; y: number } }) =>
            (datum.x ? `${datum.x}: ${datum.y.toFixed(1)}%` : null)}
          subTitle={`of ${formatBytes(quotaBytes)}`}
          title={`${pct.toFixed(pct < 10 ? 1 : 0)}%`}
          thresholds={[{ value: softPercent }, { value: hardPercent }]}
        />
      </ChartDonutThreshold>
    </div>
  );
}

interface TimeChartProps {
  title: string;
  series: Series[];
  height?: number;
  yFormat?: (v: number) => string;
  yDomain?: [number, number];
  testId: string;
  empty?: string;
}

/** Lines over time, one per series, with tooltips. */
export function TimeLineChart({ title, series, height = 240, yFormat = (v) => String(v), yDomain, testId, empty }: TimeChartProps) {
  const [ref, width] = useWidth();
  const all = series.flatMap((s) => s.points).filter((p) => p.y !== null);
  if (all.length === 0) {
    return <div ref={ref} data-testid={testId}><NoData height={height}>{empty ?? 'No data in this range yet'}</NoData></div>;
  }
  const sp = span(all.slice().sort((a, b) => a.x.getTime() - b.x.getTime()));
  const single = all.length === 1 || series.every((s) => s.points.filter((p) => p.y !== null).length <= 1);
  return (
    <div ref={ref} data-testid={testId} data-points={all.length}>
      <Chart
        ariaTitle={title}
        containerComponent={<ChartVoronoiContainer
          labels={({ datum }: { datum: XY & { childName?: string } }) =>
            `${datum.name ?? ''}${datum.name ? ': ' : ''}${datum.y === null ? '–' : yFormat(datum.y)} at ${datum.x.toLocaleString()}`}
          constrainToVisibleArea />}
        legendData={series.length > 1 ? series.map((s) => ({ name: s.name })) : undefined}
        legendPosition="bottom"
        height={height + (series.length > 1 ? 40 : 0)}
        width={width}
        padding={{ top: 10, bottom: series.length > 1 ? 80 : 45, left: 70, right: 30 }}
        scale={{ x: 'time', y: 'linear' }}
        domain={yDomain ? { y: yDomain } : undefined}
        themeColor={ChartThemeColor.multiOrdered}
        name={testId}
      >
        <ChartAxis tickFormat={(t: Date) => shortTime(t, sp)} fixLabelOverlap />
        <ChartAxis dependentAxis showGrid tickFormat={(v: number) => yFormat(v)} />
        <ChartGroup>
          {series.map((s) => (single
            ? <ChartScatter key={s.name} name={s.name} data={s.points.filter((p) => p.y !== null).map((p) => ({ ...p, name: p.name ?? s.name }))} />
            : <ChartLine key={s.name} name={s.name} data={s.points.map((p) => ({ ...p, name: p.name ?? s.name }))} />))}
        </ChartGroup>
      </Chart>
    </div>
  );
}

/** Hit rate 0..1 over time. */
export function HitRateChart({ points, testId = 'hit-rate-chart', height }: { points: XY[]; testId?: string; height?: number }) {
  return (
    <TimeLineChart title="Hit rate over time" testId={testId} height={height}
      series={[{ name: 'hit rate', points: points.map((p) => ({ ...p, name: 'hit rate' })) }]}
      yFormat={(v) => formatRate(v, 0)} yDomain={[0, 1]} empty="No queries in this range yet" />
  );
}

/** Stacked bars per bucket, one colour per series (evictions per minute by reason). */
export function StackedBarChart({ title, series, height = 240, yFormat = (v) => formatCompact(v), testId, empty }: TimeChartProps) {
  const [ref, width] = useWidth();
  const total = series.reduce((a, s) => a + s.points.reduce((b, p) => b + (p.y ?? 0), 0), 0);
  if (series.length === 0 || total === 0) {
    return <div ref={ref} data-testid={testId}><NoData height={height}>{empty ?? 'Nothing in this range yet'}</NoData></div>;
  }
  const pts = series[0].points;
  const sp = span(pts);
  return (
    <div ref={ref} data-testid={testId}>
      <Chart
        ariaTitle={title}
        containerComponent={<ChartVoronoiContainer
          labels={({ datum }: { datum: XY }) => `${reasonLabel(datum.name ?? '')}: ${yFormat(datum.y ?? 0)}`}
          constrainToVisibleArea />}
        legendData={series.map((s) => ({ name: reasonLabel(s.name) }))}
        legendPosition="bottom"
        height={height + 40}
        width={width}
        padding={{ top: 10, bottom: 80, left: 70, right: 30 }}
        scale={{ x: 'time' }}
        domainPadding={{ x: 10 }}
        themeColor={ChartThemeColor.multiUnordered}
        name={testId}
      >
        <ChartAxis tickFormat={(t: Date) => shortTime(t, sp)} fixLabelOverlap />
        <ChartAxis dependentAxis showGrid tickFormat={(v: number) => yFormat(v)} />
        <ChartStack>
          {series.map((s) => <ChartBar key={s.name} name={s.name} data={s.points.map((p) => ({ ...p, y: p.y ?? 0 }))}
            barWidth={Math.max(2, Math.min(16, (width - 120) / Math.max(1, pts.length) - 2))} />)}
        </ChartStack>
      </Chart>
    </div>
  );
}

/** Stacked areas over time (usage by storage type). */
export function StackedAreaChart({ title, series, height = 240, yFormat = (v) => formatBytes(v), testId, empty }: TimeChartProps) {
  const [ref, width] = useWidth();
  const n = series.reduce((a, s) => a + s.points.length, 0);
  if (n === 0) {
    return <div ref={ref} data-testid={testId}><NoData height={height}>{empty ?? 'No usage samples in this range yet'}</NoData></div>;
  }
  const sp = span(series[0].points);
  return (
    <div ref={ref} data-testid={testId}>
      <Chart
        ariaTitle={title}
        containerComponent={<ChartVoronoiContainer
          labels={({ datum }: { datum: XY }) => `${datum.name ?? ''}: ${yFormat(datum.y ?? 0)}`} constrainToVisibleArea />}
        legendData={series.map((s) => ({ name: s.name }))}
        legendPosition="bottom"
        height={height + 40}
        width={width}
        padding={{ top: 10, bottom: 80, left: 80, right: 30 }}
        scale={{ x: 'time' }}
        themeColor={ChartThemeColor.multiOrdered}
        name={testId}
      >
        <ChartAxis tickFormat={(t: Date) => shortTime(t, sp)} fixLabelOverlap />
        <ChartAxis dependentAxis showGrid tickFormat={(v: number) => yFormat(v)} />
        <ChartStack>
          {series.map((s) => <ChartArea key={s.name} name={s.name} data={s.points.map((p) => ({ ...p, y: p.y ?? 0 }))} />)}
        </ChartStack>
      </Chart>
    </div>
  );
}

/** Hit rate vs capacity (log x), one line per policy, the unbounded ceiling dashed. */
export function WhatIfCurveChart({ data, height = 320 }: { data: WhatIfChartData; height?: number }) {
  const [ref, width] = useWidth();
  if (data.series.length === 0 || !data.xDomain) {
    return <div ref={ref} data-testid="whatif-chart"><NoData height={height}>No results yet</NoData></div>;
  }
  const legend = [...data.series.map((s) => ({ name: s.policy })),
    ...(data.ceiling ? [{ name: 'unbounded ceiling', symbol: { type: 'dash', fill: '#8a8d90' } }] : [])];
  const [lo, hi] = data.xDomain;
  const domainX: [number, number] = lo === hi ? [lo / 2, hi * 2] : [lo, hi];
  return (
    <div ref={ref} data-testid="whatif-chart" data-lines={data.series.length}>
      <Chart
        ariaTitle="Hit rate vs capacity"
        containerComponent={<ChartVoronoiContainer
          labels={({ datum }: { datum: { x: number; y: number; policy?: string } }) =>
            `${datum.policy ?? 'ceiling'}: ${formatRate(datum.y)} at ${formatCompact(datum.x)} tokens`}
          constrainToVisibleArea />}
        legendData={legend}
        legendPosition="bottom"
        height={height + 40}
        width={width}
        padding={{ top: 10, bottom: 75, left: 70, right: 40 }}
        scale={{ x: 'log', y: 'linear' }}
        domain={{ x: domainX, y: [0, 1] }}
        themeColor={ChartThemeColor.multiOrdered}
        name="whatif"
      >
        <ChartAxis tickValues={logTicks(domainX[0], domainX[1])} tickFormat={(t: number) => formatCompact(t)} fixLabelOverlap />
        <ChartAxis dependentAxis showGrid tickFormat={(v: number) => formatRate(v, 0)} />
        <ChartGroup>
          {data.series.map((s) => (s.points.length === 1
            ? <ChartScatter key={s.policy} name={s.policy} data={s.points} />
            : <ChartLine key={s.policy} name={s.policy} data={s.points} />))}
        </ChartGroup>
        {data.ceiling ? (
          <ChartLine name="ceiling" data={data.ceiling}
            style={{ data: { strokeDasharray: '6,4', stroke: 'var(--pf-t--global--border--color--default, #8a8d90)' } }} />
        ) : null}
      </Chart>
    </div>
  );
}
