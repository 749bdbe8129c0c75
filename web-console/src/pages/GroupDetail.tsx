import { Candidates } from '../components/Candidates';
import { Pairs } from '../components/Pairs';
import { useState } from 'react';
import { Link, useLocation, useNavigate, useParams } from 'react-router-dom';
import {
  Alert, Breadcrumb, BreadcrumbItem, Button, Card, CardBody, CardHeader, CardTitle, DescriptionList,
  DescriptionListDescription, DescriptionListGroup, DescriptionListTerm, Flex, FlexItem, Grid, GridItem, PageSection,
  Title,
} from '@patternfly/react-core';
import { useQueryClient } from '@tanstack/react-query';
import { api } from '../api/client';
import { keys, useGroup, useStatsSeries, useStatsSummary, useUsageSeries } from '../api/hooks';
import { useSession } from '../auth/AuthContext';
import { canSeeGroup, permissions } from '../auth/roles';
import { HitRateChart, StackedAreaChart, StackedBarChart, UsageGauge } from '../charts';
import { ConfirmModal } from '../components/ConfirmModal';
import { RangeSelect, useRange } from '../components/RangeSelect';
import { ErrorState, Forbidden, Loading, PageHeader } from '../components/States';
import { LevelLabel } from '../components/Status';
import { formatBytes, formatCount, formatRate } from '../lib/format';
import { evictionsPerMinute, hitRateSeries, usageByType } from '../lib/series';
import { InstancesTable } from './Instances';

export default function GroupDetail() {
  const { name = '' } = useParams();
  const session = useSession();
  // a tenant asks only for its own groups: another group's page fetches nothing
  if (!canSeeGroup(session, name)) {
    return <Forbidden what={`group ${name}`} />;
  }
  return <GroupDetailView name={name} />;
}

function GroupDetailView({ name }: { name: string }) {
  const session = useSession();
  const canWrite = permissions(session.role).writeGroups;
  const q = useGroup(name, { refetchInterval: 10_000 });
  const summary = useStatsSummary();
  const [range, setRange] = useRange('1h');
  const stats = useStatsSeries({ group: name, range });
  const usage = useUsageSeries({ group: name, range });
  const loc = useLocation();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [deleting, setDeleting] = useState(false);
  const saved = (loc.state as { saved?: boolean } | null)?.saved;
  const gs = summary.data?.groups.find((g) => g.group === name);

  return (
    <>
      <PageSection>
        <Breadcrumb>
          <BreadcrumbItem><Link to="/groups">Instance groups</Link></BreadcrumbItem>
          <BreadcrumbItem isActive>{name}</BreadcrumbItem>
        </Breadcrumb>
      </PageSection>
      <PageHeader title={<>Instance group <span data-testid="group-detail-name">{name}</span></>}>
        {canWrite ? (
          <Flex style={{ marginTop: 8 }}>
            <FlexItem>
              <Button variant="secondary" onClick={() => navigate(`/groups/${encodeURIComponent(name)}/edit`)}
                data-testid="group-edit" ouiaId="group-edit">Edit</Button>
            </FlexItem>
            <FlexItem>
              <Button variant="danger" onClick={() => setDeleting(true)} data-testid="group-delete" ouiaId="group-delete">Delete</Button>
            </FlexItem>
          </Flex>
        ) : null}
      </PageHeader>
      <PageSection>
        {saved ? <Alert variant="success" isInline title="Saved" data-testid="saved-alert" timeout={6000} /> : null}
        {q.isPending ? <Loading what="Loading group" />
          : q.isError ? <ErrorState error={q.error} what={`group ${name}`} retry={() => q.refetch()} />
            : (
              <Grid hasGutter>
                <GridItem lg={4}>
                  <Card><CardHeader><CardTitle>Usage</CardTitle></CardHeader>
                    <CardBody>
                      <UsageGauge name={name} usedBytes={q.data.data.usage?.usedBytes ?? gs?.usedBytes ?? 0}
                        quotaBytes={q.data.data.quotaBytes} softPercent={q.data.data.waterLevels.softPercent}
                        hardPercent={q.data.data.waterLevels.hardPercent} />
                      <DescriptionList isCompact isHorizontal>
                        <DescriptionListGroup>
                          <DescriptionListTerm>Used</DescriptionListTerm>
                          <DescriptionListDescription data-testid="group-used">
                            {formatBytes(q.data.data.usage?.usedBytes ?? 0)} of {formatBytes(q.data.data.quotaBytes)}{' '}
                            <LevelLabel percent={q.data.data.usage?.usedPercent ?? 0} soft={q.data.data.waterLevels.softPercent}
                              hard={q.data.data.waterLevels.hardPercent} />
                          </DescriptionListDescription>
                        </DescriptionListGroup>
                        {Object.entries(q.data.data.usage?.byType ?? {}).map(([t, b]) => (
                          <DescriptionListGroup key={t}>
                            <DescriptionListTerm>{t}</DescriptionListTerm>
                            <DescriptionListDescription>{formatBytes(b)}</DescriptionListDescription>
                          </DescriptionListGroup>
                        ))}
                        <DescriptionListGroup>
                          <DescriptionListTerm>Hit rate now / hour / day</DescriptionListTerm>
                          <DescriptionListDescription data-testid="group-hit-rates">
                            {formatRate(gs?.hitRate?.last5m)} / {formatRate(gs?.hitRate?.lastHour)} / {formatRate(gs?.hitRate?.lastDay)}
                          </DescriptionListDescription>
                        </DescriptionListGroup>
                      </DescriptionList>
                    </CardBody>
                  </Card>
                </GridItem>
                <GridItem lg={8}>
                  <Card><CardHeader><CardTitle>Configuration</CardTitle></CardHeader>
                    <CardBody>
                      <Pairs columnModifier={{ default: '2Col' }} isCompact testId="group-config" items={[
                          ['Quota', `${formatBytes(q.data.data.quotaBytes)} (${formatCount(q.data.data.quotaBytes)} bytes)`],
                          ['Per-type quotas', Object.entries(q.data.data.storageTypeQuotas ?? {}).map(([t, b]) => `${t}: ${formatBytes(b)}`).join(', ') || 'none'],
                          ['Water levels', `soft ${q.data.data.waterLevels.softPercent} %, hard ${q.data.data.waterLevels.hardPercent} %`],
                          ['Eviction policy', q.data.data.eviction.policy],
                          ['Trigger period', `${q.data.data.eviction.triggerPeriodSeconds} s`],
                          ['Step', `${q.data.data.eviction.stepSize} keys / ${q.data.data.eviction.stepPercentage} %`],
                          ['TTL', q.data.data.eviction.ttlSeconds ? `${q.data.data.eviction.ttlSeconds} s` : 'none'],
                          ['Reader lease', `${q.data.data.eviction.readerLeaseMs} ms`],
                          ['Storage candidates', <Candidates names={q.data.data.storageCandidates} missing={q.data.data.missingStorages} />],
                          ['Event-report storages', (q.data.data.eventReportStorageCandidates ?? []).length === 0 ? '–'
                            : <Candidates names={q.data.data.eventReportStorageCandidates ?? []} missing={q.data.data.missingStorages}
                              testId="group-report-candidates" />],
                          ['Max instance count', q.data.data.maxInstanceCount ? String(q.data.data.maxInstanceCount) : 'unlimited'],
                          ['Anonymous access', q.data.data.allowAnonymousMeta ? 'allowed' : 'no'],
                          ['Version', String(q.data.data.version ?? q.data.etag ?? '–')],
                        ]} />
                    </CardBody>
                  </Card>
                </GridItem>
              </Grid>
            )}
      </PageSection>
      <PageSection>
        <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }}>
          <FlexItem><Title headingLevel="h2">History</Title></FlexItem>
          <FlexItem><RangeSelect value={range} onChange={setRange} /></FlexItem>
        </Flex>
        <Grid hasGutter style={{ marginTop: 16 }}>
          <GridItem lg={12}>
            <Card><CardHeader><CardTitle>Usage over time by storage type</CardTitle></CardHeader>
              <CardBody>
                {usage.isPending ? <Loading what="Loading usage" />
                  : usage.isError ? <ErrorState error={usage.error} what="usage history" retry={() => usage.refetch()} />
                    : <StackedAreaChart title="Usage by storage type" testId="group-usage-chart" series={usageByType(usage.data.points)} />}
              </CardBody>
            </Card>
          </GridItem>
          <GridItem lg={6}>
            <Card><CardHeader><CardTitle>Hit rate over time</CardTitle></CardHeader>
              <CardBody>
                {stats.isPending ? <Loading what="Loading hit rate" />
                  : stats.isError ? <ErrorState error={stats.error} what="hit-rate history" retry={() => stats.refetch()} />
                    : <HitRateChart points={hitRateSeries(stats.data.points)} testId="group-hit-rate-chart" />}
              </CardBody>
            </Card>
          </GridItem>
          <GridItem lg={6}>
            <Card><CardHeader><CardTitle>Evictions per minute by reason</CardTitle></CardHeader>
              <CardBody>
                {stats.isPending ? <Loading what="Loading evictions" />
                  : stats.isError ? <ErrorState error={stats.error} what="eviction history" retry={() => stats.refetch()} />
                    : <StackedBarChart title="Evictions per minute" testId="group-evictions-chart"
                      series={evictionsPerMinute(stats.data.points, stats.data.step)} empty="No evictions in this range"
                      yFormat={(v) => v.toFixed(v < 10 ? 1 : 0)} />}
              </CardBody>
            </Card>
          </GridItem>
        </Grid>
      </PageSection>
      <PageSection>
        <Title headingLevel="h2" style={{ marginBottom: 16 }}>Instances</Title>
        <InstancesTable group={name} />
      </PageSection>
      {deleting ? (
        <ConfirmModal title={`Delete group ${name}?`} confirmLabel="Delete" danger testId="group-delete-modal"
          onClose={() => setDeleting(false)}
          onConfirm={async () => {
            await api.del(`/api/v1/instance-groups/${encodeURIComponent(name)}`, q.data?.etag);
            await qc.invalidateQueries({ queryKey: keys.groups });
            navigate('/groups');
          }}>
          The group's quota and settings are removed. The server refuses while the group has instances.
        </ConfirmModal>
      ) : null}
    </>
  );
}
