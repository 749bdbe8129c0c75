import { Link, useParams } from 'react-router-dom';
import {
  Breadcrumb, BreadcrumbItem, Card, CardBody, CardHeader, CardTitle, CodeBlock, CodeBlockCode, Flex, FlexItem, Grid, GridItem, PageSection,
} from '@patternfly/react-core';
import { useInstance, useMetaInstance, useStatsSeries, useStatsSummary } from '../api/hooks';
import { HitRateChart } from '../charts';
import { RangeSelect, useRange } from '../components/RangeSelect';
import { ErrorState, Loading, PageHeader } from '../components/States';
import { formatBytes, formatCount, formatRate, formatTime } from '../lib/format';
import { hitRateSeries } from '../lib/series';
import { PromptMissTool } from './PromptMiss';
import { Pairs } from '../components/Pairs';

export default function InstanceDetail() {
  const { id = '' } = useParams();
  const q = useInstance(id);
  // the metadata plane's view is asked for only once the control plane let this caller see the instance
  const meta = useMetaInstance(id, { enabled: q.isSuccess });
  const summary = useStatsSummary({ enabled: q.isSuccess });
  const [range, setRange] = useRange('1h');
  const stats = useStatsSeries({ instance: id, range }, { enabled: q.isSuccess });
  const s = summary.data?.instances.find((x) => x.instance === id);

  return (
    <>
      <PageSection>
        <Breadcrumb>
          <BreadcrumbItem><Link to="/instances">Instances</Link></BreadcrumbItem>
          <BreadcrumbItem isActive>{id}</BreadcrumbItem>
        </Breadcrumb>
      </PageSection>
      <PageHeader title={<>Instance <span data-testid="instance-id">{id}</span></>}>
        <p style={{ marginTop: 8 }}>
          <Link to={`/engine/${encodeURIComponent(id)}`} data-testid="instance-engine-caches">
            Engine caches: where this instance's cache lives in the engines, router hit rate, prefix scores
          </Link>
        </p>
      </PageHeader>
      <PageSection>
        {q.isPending ? <Loading what="Loading instance" />
          : q.isError ? <ErrorState error={q.error} what={`instance ${id}`} retry={() => q.refetch()} />
            : (
              <Grid hasGutter>
                <GridItem lg={6}>
                  <Card><CardHeader><CardTitle>KV config</CardTitle></CardHeader>
                    <CardBody>
                      <Pairs isCompact isHorizontal testId="instance-config" items={[
                        ['Group', q.data.group],
                        ['Block size', `${q.data.blockSize} tokens`],
                        ['Hash scheme', q.data.hashScheme],
                        ['Model', String((q.data.modelDeployment as { model_name?: string } | undefined)?.model_name ?? '–')],
                        ['Location specs', (q.data.locationSpecInfos ?? []).map((l) => `${l.name} (${formatBytes(l.size)})`).join(', ') || '–'],
                        ['Registered', formatTime(q.data.createdAt)],
                      ]} />
                      <CodeBlock style={{ marginTop: 12 }}>
                        <CodeBlockCode>{JSON.stringify({ modelDeployment: q.data.modelDeployment,
                          locationSpecInfos: q.data.locationSpecInfos, locationSpecGroups: q.data.locationSpecGroups }, null, 2)}</CodeBlockCode>
                      </CodeBlock>
                    </CardBody>
                  </Card>
                </GridItem>
                <GridItem lg={6}>
                  <Card><CardHeader><CardTitle>On the metadata plane</CardTitle></CardHeader>
                    <CardBody>
                      {meta.isPending ? <Loading what="Loading key counts" />
                        : meta.isError ? <ErrorState error={meta.error} what="the metadata plane's view" retry={() => meta.refetch()} />
                          : <Pairs isCompact isHorizontal testId="instance-meta" items={[
                            ['Keys', formatCount(meta.data.keys)],
                            ['Bytes per block', `${formatBytes(meta.data.bytes_per_block)} (${formatCount(meta.data.bytes_per_block)} bytes)`],
                            ['Bytes', formatBytes(meta.data.keys * meta.data.bytes_per_block)],
                            ['Specs', (meta.data.specs ?? []).join(', ') || '–'],
                            ['Open write sessions', formatCount(meta.data.open_write_sessions ?? 0)],
                            ['Hit rate (hour)', formatRate(s?.hitRateLastHour)],
                            ['Queries (hour)', formatCount(s?.queriesLastHour ?? 0)],
                          ]} />}
                    </CardBody>
                  </Card>
                </GridItem>
                <GridItem lg={12}>
                  <Card><CardHeader>
                    <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} style={{ width: '100%' }}>
                      <FlexItem><CardTitle>Hit rate over time</CardTitle></FlexItem>
                      <FlexItem><RangeSelect value={range} onChange={setRange} /></FlexItem>
                    </Flex>
                  </CardHeader>
                    <CardBody>
                      {stats.isPending ? <Loading what="Loading hit rate" />
                        : stats.isError ? <ErrorState error={stats.error} what="hit-rate history" retry={() => stats.refetch()} />
                          : <HitRateChart points={hitRateSeries(stats.data.points)} testId="instance-hit-rate-chart" />}
                    </CardBody>
                  </Card>
                </GridItem>
                <GridItem lg={12}>
                  <Card data-testid="prompt-miss-card"><CardHeader><CardTitle>Why does this prompt miss?</CardTitle></CardHeader>
                    <CardBody><PromptMissTool instanceId={id} /></CardBody>
                  </Card>
                </GridItem>
              </Grid>
            )}
      </PageSection>
    </>
  );
}
