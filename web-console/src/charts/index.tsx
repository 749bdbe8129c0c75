// Lazy wrappers: the chart library (Victory, d3) loads only when a chart is drawn, after the numbers are on screen.
import { lazy, Suspense, type ComponentProps, type ComponentType } from 'react';
import { Skeleton } from '@patternfly/react-core';

const load = () => import('./Charts');

function lazyChart<K extends 'UsageGauge' | 'TimeLineChart' | 'HitRateChart' | 'StackedBarChart' | 'StackedAreaChart' | 'WhatIfCurveChart'>(
  name: K, height: number,
) {
  const L = lazy(async () => ({ default: (await load())[name] as ComponentType<any> }));
  type P = ComponentProps<typeof import('./Charts')[K]>;
  return function LazyChart(props: P) {
    return (
      <Suspense fallback={<Skeleton height={`${height}px`} screenreaderText="Loading chart" />}>
        <L {...props} />
      </Suspense>
    );
  };
}

export const UsageGauge = lazyChart('UsageGauge', 200);
export const TimeLineChart = lazyChart('TimeLineChart', 240);
export const HitRateChart = lazyChart('HitRateChart', 240);
export const StackedBarChart = lazyChart('StackedBarChart', 240);
export const StackedAreaChart = lazyChart('StackedAreaChart', 240);
export const WhatIfCurveChart = lazyChart('WhatIfCurveChart', 320);
