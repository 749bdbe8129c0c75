import { Link } from 'react-router-dom';
import {
  Card, CardBody, CardHeader, CardTitle, DescriptionList, DescriptionListDescription, DescriptionListGroup,
  DescriptionListTerm, Flex, FlexItem, Gallery, Grid, GridItem, Label, List, ListItem, PageSection, Title,
} from '@patternfly/react-core';
import { useQueries } from '@tanstack/react-query';
import { statsSeriesQuery, useServices, useStatsSeries, useStatsSummary, type Range } from '../api/hooks';
import type { GroupStats, Services } from '../api/types';
import { HitRateChart, StackedBarChart, TimeLineChart, UsageGauge } from '../charts';
import { RangeSelect, useRange } from '../components/RangeSelect';
import { Empty, ErrorState, Loading, PageHeader } from '../components/States';
import { StatusLabel } from '../components/Status';
import { formatBytes, formatCount, formatRate, formatTime, ouia, sumValues } from '../lib/format';
import { evictionsPerMinute, hitRateSeries, reasonLabel } from '../lib/series';

const MAX_GROUP_LINES = 8;

function ServicesCard() {
  const q = useServices();
  return (
    <Card data-testid="services-card" {...ouia('services-card', 'PF6/Card')}>
      <CardHeader><CardTitle>Services</CardTitle></CardHeader>
      <CardBody>
        {q.isPending ? <Loading what="Loading services" />
          : q.isError ? <ErrorState error={q.error} what="service health" retry={() => q.refetch()} />
            : <ServiceList s={q.data} />}
      </CardBody>
    </Card>
  );
}

function ServiceList({ s }: { s: Services }) {
  return (
    <List isPlain>
      <ListItem data-testid="service-control-plane">
        <Flex spaceItems={{ default: 'spaceItemsSm' }}>
          <FlexItem><strong>Control plane</strong></FlexItem>
          <FlexItem><StatusLabel status={s.controlPlane?.status} /></FlexItem>
          {s.controlPlane?.version ? <FlexItem>v{s.controlPlane.version}</FlexItem> : null}
          {s.controlPlane?.startedAt ? <FlexItem>since {formatTime(s.controlPlane.startedAt)}</FlexItem> : null}
        </Flex>
      </ListItem>
      {(s.metadataPlanes ?? []).length === 0 ? (
        <ListItem data-testid="service-meta-none">
          <Flex spaceItems={{ default: 'spaceItemsSm' }}>
            <FlexItem><strong>Metadata plane</strong></FlexItem>
            <FlexItem><StatusLabel status="DOWN" /></FlexItem>
            <FlexItem>no replica has reported</FlexItem>
          </Flex>
        </ListItem>
      ) : null}
      {(s.metadataPlanes ?? []).map((m) => (
        <ListItem key={m.id} data-testid={`service-meta-${m.id}`}>
          <Flex spaceItems={{ default: 'spaceItemsSm' }}>
            <FlexItem><strong>Metadata plane</strong> {m.id}</FlexItem>
            <FlexItem><StatusLabel status={m.status} /></FlexItem>
            {m.leader ? <FlexItem><Label color="purple" data-testid="leader-badge">leader</Label></FlexItem> : null}
            {m.store ? <FlexItem>store: {m.store}</FlexItem> : null}
            {m.instances !== undefined ? <FlexItem>{formatCount(m.instances)} instances</FlexItem> : null}
            {m.keys !== undefined ? <FlexItem>{formatCount(m.keys)} keys</FlexItem> : null}
            {m.lastSeen ? <FlexItem>last seen {formatTime(m.lastSeen)}</FlexItem> : null}
          </Flex>
        </ListItem>
      ))}
      {(s.agents ?? []).map((a) => (
        <ListItem key={a.id} data-testid={`service-agent-${a.id}`}>
          <Flex spaceItems={{ default: 'spaceItemsSm' }}>
            <FlexItem><strong>Data agent</strong> {a.id}</FlexItem>
            <FlexItem><StatusLabel status={a.status} /></FlexItem>
            {a.lastSeen ? <FlexItem>last seen {formatTime(a.lastSeen)}</FlexItem> : null}
          </Flex>
        </ListItem>
      ))}
      {(s.agents ?? []).length === 0 ? <ListItem data-testid="service-agents-none">No data agent reports</ListItem> : null}
    </List>
  );
}

function Totals() {
  const q = useStatsSummary();
  if (q.isPending) return <Loading what="Loading totals" />;
  if (q.isError) return <ErrorState error={q.error} what="totals" retry={() => q.refetch()} />;
  const t = q.data.totals;
  const items: [string, string, string][] = [
    ['Groups', formatCount(t.groups), 'total-groups'],
    ['Instances', formatCount(t.instances), 'total-instances'],
    ['Storages', formatCount(t.storages), 'total-storages'],
    ['Quota', formatBytes(t.quotaBytes), 'total-quota'],
    ['Used', formatBytes(t.usedBytes), 'total-used'],
    ['Hit rate (last hour)', formatRate(t.hitRateLastHour), 'total-hit-rate'],
  ];
  return (
    <DescriptionList isHorizontal={false} columnModifier={{ default: '2Col', lg: '3Col' }} data-testid="totals">
      {items.map(([term, v, id]) => (
        <DescriptionListGroup key={id}>
          <DescriptionListTerm>{term}</DescriptionListTerm>
          <DescriptionListDescription data-testid={id}><Title headingLevel="h3" size="xl">{v}</Title></DescriptionListDescription>
        </DescriptionListGroup>
      ))}
    </DescriptionList>
  );
}

export function GroupCard({ g }: { g: GroupStats }) {
  const ev = Object.entries(g.evictionsPerMinute ?? {}).filter(([, v]) => v > 0);
  return (
    <Card data-testid={`group-card-${g.group}`} {...ouia(`group-card-${g.group}`, 'PF6/Card')}>
      <CardHeader><CardTitle><Link to={`/groups/${encodeURIComponent(g.group)}`}>{g.group}</Link></CardTitle></CardHeader>
      <CardBody>
        <UsageGauge name={g.group} usedBytes={g.usedBytes} quotaBytes={g.quotaBytes} softPercent={g.softPercent}
          hardPercent={g.hardPercent} />
        <DescriptionList isCompact isHorizontal>
          <DescriptionListGroup>
            <DescriptionListTerm>Used</DescriptionListTerm>
            <DescriptionListDescription data-testid="group-used">
              {formatBytes(g.usedBytes)} of {formatBytes(g.quotaBytes)}
            </DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Hit rate now</DescriptionListTerm>
            <DescriptionListDescription data-testid="group-hit-now">{formatRate(g.hitRate?.last5m)}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Last hour</DescriptionListTerm>
            <DescriptionListDescription data-testid="group-hit-hour">{formatRate(g.hitRate?.lastHour)}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Last day</DescriptionListTerm>
            <DescriptionListDescription data-testid="group-hit-day">{formatRate(g.hitRate?.lastDay)}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Queries (hour)</DescriptionListTerm>
            <DescriptionListDescription data-testid="group-queries">{formatCount(g.queriesLastHour)}</DescriptionListDescription>
          </DescriptionListGroup>
          <DescriptionListGroup>
            <DescriptionListTerm>Evictions / min</DescriptionListTerm>
            <DescriptionListDescription data-testid="group-evictions">
              {ev.length === 0 ? 'none'
                : ev.map(([r, v]) => `${reasonLabel(r)} ${v.toFixed(v < 10 ? 1 : 0)}`).join(', ')}
              {ev.length > 1 ? ` (total ${sumValues(g.evictionsPerMinute).toFixed(1)})` : ''}
            </DescriptionListDescription>
          </DescriptionListGroup>
        </DescriptionList>
      </CardBody>
    </Card>
  );
}

function GroupCards() {
  const q = useStatsSummary();
  if (q.isPending) return <Loading what="Loading groups" />;
  if (q.isError) return <ErrorState error={q.error} what="group usage" retry={() => q.refetch()} />;
  if (q.data.groups.length === 0) {
    return <Empty title="No instance groups" testId="no-groups">Create a storage and an instance group to start.</Empty>;
  }
  return (
    <Gallery hasGutter minWidths={{ default: '300px' }} data-testid="group-cards">
      {q.data.groups.map((g) => <GroupCard key={g.group} g={g} />)}
    </Gallery>
  );
}

/** Hit rate over time, one line per group (the busiest first, at most MAX_GROUP_LINES); the pool's when none. */
function HitRateByGroup({ range, poolPoints }: { range: Range; poolPoints: import('../api/types').StatsPoint[] }) {
  const summary = useStatsSummary();
  const groups = [...(summary.data?.groups ?? [])].sort((a, b) => b.queriesLastHour - a.queriesLastHour)
    .slice(0, MAX_GROUP_LINES).map((g) => g.group).sort();
  const qs = useQueries({ queries: groups.map((g) => statsSeriesQuery({ group: g, range })) });
  if (groups.length <= 1 || qs.some((q) => q.isError)) {
    return <HitRateChart points={hitRateSeries(poolPoints)} testId="overview-hit-rate-chart" />;
  }
  if (qs.some((q) => q.isPending)) return <Loading what="Loading hit rates" />;
  return (
    <TimeLineChart title="Hit rate over time by group" testId="overview-hit-rate-chart" yDomain={[0, 1]}
      yFormat={(v) => formatRate(v, 0)} empty="No queries in this range yet"
      series={groups.map((g, i) => ({ name: g, points: hitRateSeries(qs[i].data?.points ?? []).map((p) => ({ ...p, name: g })) }))} />
  );
}

function PoolCharts() {
  const [range, setRange] = useRange('1h');
  const q = useStatsSeries({ range });
  return (
    <>
      <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }}>
        <FlexItem><Title headingLevel="h2">Hit rate and evictions</Title></FlexItem>
        <FlexItem><RangeSelect value={range} onChange={setRange} /></FlexItem>
      </Flex>
      {q.isPending ? <Loading what="Loading series" />
        : q.isError ? <ErrorState error={q.error} what="hit-rate history" retry={() => q.refetch()} />
          : (
            <Grid hasGutter>
              <GridItem lg={6}>
                <Card><CardHeader><CardTitle>Hit rate over time</CardTitle></CardHeader>
                  <CardBody><HitRateByGroup range={range} poolPoints={q.data.points} /></CardBody>
                </Card>
              </GridItem>
              <GridItem lg={6}>
                <Card><CardHeader><CardTitle>Evictions per minute by reason</CardTitle></CardHeader>
                  <CardBody>
                    <StackedBarChart title="Evictions per minute by reason" testId="overview-evictions-chart"
                      series={evictionsPerMinute(q.data.points, q.data.step)} empty="No evictions in this range"
                      yFormat={(v) => v.toFixed(v < 10 ? 1 : 0)} />
                  </CardBody>
                </Card>
              </GridItem>
            </Grid>
          )}
    </>
  );
}

export default function Overview() {
  return (
    <>
      <PageHeader title="Overview" />
      <PageSection>
        <Grid hasGutter>
          <GridItem lg={7}><ServicesCard /></GridItem>
          <GridItem lg={5}>
            <Card data-testid="totals-card"><CardHeader><CardTitle>Totals</CardTitle></CardHeader>
              <CardBody><Totals /></CardBody></Card>
          </GridItem>
        </Grid>
      </PageSection>
      <PageSection>
        <Title headingLevel="h2" style={{ marginBottom: 'var(--pf-t--global--spacer--md)' }}>Groups</Title>
        <GroupCards />
      </PageSection>
      <PageSection>
        <PoolCharts />
      </PageSection>
    </>
  );
}
