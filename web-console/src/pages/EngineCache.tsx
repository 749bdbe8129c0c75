import { useState, type FormEvent } from 'react';
import { Link, useParams } from 'react-router-dom';
import {
  ActionGroup, Alert, Breadcrumb, BreadcrumbItem, Button, Card, CardBody, CardHeader, CardTitle, Flex, FlexItem, Form,
  FormGroup, Grid, GridItem, Label, PageSection, Radio, TextArea, TextInput, Title, Tooltip,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import ExclamationTriangleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-triangle-icon';
import EyeSlashIcon from '@patternfly/react-icons/dist/esm/icons/eye-slash-icon';
import { ApiError, errorMessage } from '../api/client';
import {
  scorePrompt, useEngineCache, type EngineCache, type EnginePod, type RouterStats, type ScoreRequest, type ScoreResponse,
} from '../api/engine';
import { useGroup, useInstance, useMetaInstance } from '../api/hooks';
import { permissions } from '../auth/roles';
import { loadSession } from '../auth/session';
import { TimeLineChart } from '../charts';
import { Helper } from '../components/FormFields';
import { Pairs } from '../components/Pairs';
import { Empty, ErrorState, Loading, PageHeader } from '../components/States';
import {
  MAX_SCORE_ITEMS, parseBlockKeys, parseTierWeights, podTiers, podTotal, routerSeries, tierLabel, tierTotals,
} from '../lib/engine';
import { formatBytes, formatCount, formatRate, formatTime, ouia } from '../lib/format';
import { parseTokenIds } from '../lib/validation';

/** live / replaying / uncertain as a coloured badge; an uncertain pod (a lost event) is flagged. */
export function PodStateBadge({ state }: { state?: string }) {
  switch (state) {
    case 'live':
      return <Label color="green" isCompact data-testid="pod-state">live</Label>;
    case 'replaying':
      return (
        <Tooltip content="Catching up from the Kafka log or the engine's replay socket">
          <Label color="blue" isCompact data-testid="pod-state">replaying</Label>
        </Tooltip>
      );
    case 'uncertain':
      return (
        <Tooltip content="Events were lost (a sequence gap with no replay): this pod's blocks may be wrong until it resyncs">
          <Label color="orange" isCompact icon={<ExclamationTriangleIcon />} data-testid="pod-state">uncertain</Label>
        </Tooltip>
      );
    default:
      return <Label color="grey" isCompact data-testid="pod-state">{state ?? 'unknown'}</Label>;
  }
}

function TierTotalsRow({ label, totals, tiers, testId }: {
  label: string; totals: Record<string, number>; tiers: string[]; testId: string;
}) {
  const sum = Object.values(totals).reduce((a, b) => a + b, 0);
  return (
    <Tr data-testid={testId}>
      <Td dataLabel="Pod">{label}</Td>
      <Td />
      <Td />
      {tiers.map((t) => <Td key={t} dataLabel={tierLabel(t)} data-testid={`${testId}-${t}`}>{formatCount(totals[t] ?? 0)}</Td>)}
      <Td dataLabel="All tiers" data-testid={`${testId}-all`}>{formatCount(sum)}</Td>
      <Td />
      <Td />
    </Tr>
  );
}

/** Per pod: blocks per engine tier, state and last event; totals over all pods and over those the router uses. */
export function EnginePodsTable({ pods }: { pods: EnginePod[] }) {
  if (pods.length === 0) {
    return (
      <Empty title="No engine pods report for this instance" testId="engine-pods-empty">
        No engine has sent a KV event (or a KVCM ReportEvent) for this instance yet, so only the pool's own storage
        holds its cache.
      </Empty>
    );
  }
  const tiers = podTiers(pods);
  const hidden = pods.filter((p) => p.visible === false).length;
  const sorted = [...pods].sort((a, b) => a.pod.localeCompare(b.pod));
  return (
    <Table aria-label="Engine pods" variant="compact" ouiaId="engine-pods-table" data-testid="engine-pods-table">
      <Thead>
        <Tr>
          <Th modifier="wrap">Pod</Th>
          <Th modifier="wrap">Source</Th>
          <Th modifier="wrap">State</Th>
          {tiers.map((t) => <Th key={t} modifier="wrap" data-testid={`tier-head-${t}`}>{tierLabel(t)}</Th>)}
          <Th modifier="wrap">All tiers</Th>
          <Th modifier="wrap">Last event</Th>
          <Th modifier="wrap">Last sequence</Th>
        </Tr>
      </Thead>
      <Tbody>
        {sorted.map((p) => (
          <Tr key={p.pod} data-testid={`engine-pod-${p.pod}`} data-state={p.state ?? ''}
            data-visible={p.visible === false ? 'false' : 'true'}
            style={p.visible === false ? { color: 'var(--pf-t--global--text--color--subtle)' } : undefined}>
            <Td dataLabel="Pod">
              <code>{p.pod}</code>
              {p.visible === false ? (
                <> <Tooltip content="Known but not used for routing or scores">
                  <Label variant="outline" isCompact icon={<EyeSlashIcon />} data-testid="pod-hidden">hidden</Label>
                </Tooltip></>
              ) : null}
            </Td>
            <Td dataLabel="Source">{p.source ?? '–'}</Td>
            <Td dataLabel="State"><PodStateBadge state={p.state} /></Td>
            {tiers.map((t) => <Td key={t} dataLabel={tierLabel(t)} data-testid={`pod-tier-${t}`}>{formatCount(p.tiers[t] ?? 0)}</Td>)}
            <Td dataLabel="All tiers">{formatCount(podTotal(p))}</Td>
            <Td dataLabel="Last event">{formatTime(p.last_event_at)}</Td>
            <Td dataLabel="Last sequence">{p.last_seq === null || p.last_seq === undefined ? '–' : formatCount(p.last_seq)}</Td>
          </Tr>
        ))}
      </Tbody>
      <Tbody data-testid="tier-totals-body" style={{ fontWeight: 600 }}>
        <TierTotalsRow label="Total, all pods" totals={tierTotals(pods)} tiers={tiers} testId="tier-totals" />
        {hidden > 0 ? (
          <TierTotalsRow label={`Total, used by the router (${hidden} hidden pod${hidden === 1 ? '' : 's'} left out)`}
            totals={tierTotals(pods, true)} tiers={tiers} testId="tier-totals-visible" />
        ) : null}
      </Tbody>
    </Table>
  );
}

/** The pool's own tiers: its keys for this instance (metadata plane) and the storages of the instance's group. */
export function PoolTiers({ instanceId, poolKeys }: { instanceId: string; poolKeys?: number }) {
  const inst = useInstance(instanceId);
  const meta = useMetaInstance(instanceId, { enabled: inst.isSuccess });
  const group = useGroup(inst.data?.group ?? '', { enabled: !!inst.data?.group });
  if (inst.isPending) return <Loading what="Loading the pool's view" />;
  if (inst.isError && inst.error instanceof ApiError && inst.error.status === 404) {
    // engines may report for a model no KVCM connector registered: then the pool holds none of its cache
    return (
      <Alert variant="info" isInline isPlain data-testid="pool-unregistered"
        title="Not registered with the pool: engines report for it, but the pool stores none of its cache" />
    );
  }
  if (inst.isError) return <ErrorState error={inst.error} what={`instance ${instanceId}`} retry={() => inst.refetch()} />;
  if (meta.isPending) return <Loading what="Loading key counts" />;
  if (meta.isError) return <ErrorState error={meta.error} what="the metadata plane's view" retry={() => meta.refetch()} />;
  const m = meta.data;
  const storages = group.data?.data.storageCandidates ?? [];
  return (
    <Pairs isCompact isHorizontal testId="pool-tiers" items={[
      ['Keys in the pool', <span data-testid="pool-keys">{formatCount(poolKeys ?? m.keys)}</span>],
      ['Bytes', formatBytes((poolKeys ?? m.keys) * m.bytes_per_block)],
      ['Location specs', (m.specs ?? []).join(', ') || '–'],
      ['Storages (group)', group.isError ? `unavailable: ${errorMessage(group.error)}`
        : <span data-testid="pool-storages">{storages.join(', ') || '–'}</span>],
    ]} />
  );
}

/** The headline numbers: blocks per engine tier (all pods) and the pool's keys. */
function WhereSummary({ cache }: { cache: EngineCache }) {
  const totals = tierTotals(cache.pods);
  const tiers = podTiers(cache.pods);
  return (
    <Flex spaceItems={{ default: 'spaceItemsXl' }} data-testid="where-summary" style={{ marginBottom: 16 }}>
      {tiers.map((t) => (
        <FlexItem key={t} data-testid={`where-${t}`}>
          <div style={{ fontSize: '1.5rem', fontWeight: 600 }}>{formatCount(totals[t])}</div>
          <div>{tierLabel(t)} blocks</div>
        </FlexItem>
      ))}
      <FlexItem data-testid="where-pool">
        <div style={{ fontSize: '1.5rem', fontWeight: 600 }}>{cache.pool ? formatCount(cache.pool.keys) : '–'}</div>
        <div>Pool keys (KVPool storage)</div>
      </FlexItem>
    </Flex>
  );
}

function Rate({ label, value, testId, help }: { label: string; value: number | null; testId: string; help: string }) {
  return (
    <FlexItem data-testid={testId}>
      <Tooltip content={help}>
        <div style={{ fontSize: '1.75rem', fontWeight: 600 }} data-testid={`${testId}-value`}>{formatRate(value)}</div>
      </Tooltip>
      <div>{label}</div>
    </FlexItem>
  );
}

/** Routed vs random vs pool hit rate, as numbers and per minute. */
export function RouterHitRate({ router }: { router?: RouterStats }) {
  if (!router || router.queries === 0) {
    return (
      <Empty title="No prompts scored yet" testId="router-empty">
        The rates appear once prompts for this instance were scored (the pool's lookups or POST /api/v1/engine/scores).
      </Empty>
    );
  }
  return (
    <>
      <Flex spaceItems={{ default: 'spaceItems2xl' }} data-testid="router-rates" style={{ marginBottom: 12 }}>
        <Rate label="Prefix-aware router" value={router.routed_hit_rate} testId="rate-routed"
          help="Share of prompt blocks cached on the pod with the best prefix score" />
        <Rate label="Random pod" value={router.random_hit_rate} testId="rate-random"
          help="Expected share of prompt blocks cached on a pod picked at random" />
        <Rate label="Pool" value={router.pool_hit_rate} testId="rate-pool"
          help="Share of prompt blocks the pool itself serves (its SERVING prefix)" />
        <FlexItem>
          <div style={{ fontSize: '1.75rem', fontWeight: 600 }} data-testid="router-queries">{formatCount(router.queries)}</div>
          <div>prompts, {formatCount(router.prompt_blocks)} blocks ({formatCount(router.routed_hit_blocks)} routed hits)</div>
        </FlexItem>
      </Flex>
      <TimeLineChart title="Hit rate per minute: router, random pod, pool" testId="router-chart"
        series={routerSeries(router.series)} yFormat={(v) => formatRate(v, 0)} yDomain={[0, 1]}
        empty="No prompts in the recorded minutes" />
    </>
  );
}

/** A score answer: every pod's longest cached prefix per tier and score, best first, and the pool's SERVING prefix. */
export function ScoreResult({ result }: { result: ScoreResponse }) {
  const tiers = podTiers(result.pods.map((p) => ({ pod: p.pod, tiers: p.prefix_per_tier ?? {} })));
  const pods = [...result.pods].sort((a, b) => b.score - a.score || b.longest_prefix - a.longest_prefix || a.pod.localeCompare(b.pod));
  return (
    <div data-testid="score-result">
      <Alert variant="info" isInline isPlain data-testid="score-summary"
        title={`${formatCount(result.blocks)} block${result.blocks === 1 ? '' : 's'}; the pool serves a prefix of ${formatCount(result.pool?.serving_prefix ?? 0)}`} />
      {pods.length === 0 ? (
        <Empty title="No pod holds the first block" testId="score-no-pods">
          No engine pod has this prompt's first block cached, so no pod scores.
        </Empty>
      ) : (
        <Table aria-label="Pod scores" variant="compact" ouiaId="score-table" data-testid="score-table" style={{ marginTop: 8 }}>
          <Thead>
            <Tr>
              <Th>Pod</Th>
              <Th>Longest prefix (blocks)</Th>
              {tiers.map((t) => <Th key={t}>Prefix on {t}</Th>)}
              <Th>Score</Th>
            </Tr>
          </Thead>
          <Tbody>
            {pods.map((p, i) => (
              <Tr key={p.pod} data-testid={`score-row-${p.pod}`} isRowSelected={i === 0}>
                <Td dataLabel="Pod"><code>{p.pod}</code>{i === 0 ? <> <Label color="green" isCompact>best</Label></> : null}</Td>
                <Td dataLabel="Longest prefix (blocks)" data-testid="score-prefix">{formatCount(p.longest_prefix)}</Td>
                {tiers.map((t) => <Td key={t} dataLabel={`Prefix on ${t}`}>{formatCount(p.prefix_per_tier?.[t] ?? 0)}</Td>)}
                <Td dataLabel="Score" data-testid="score-value">{Number.isFinite(p.score) ? p.score.toFixed(2) : '–'}</Td>
              </Tr>
            ))}
          </Tbody>
        </Table>
      )}
    </div>
  );
}

type Mode = 'tokens' | 'keys';

/** Which field a server refusal blames, from the problem's `field` or its text. */
export function blamedField(e: unknown): 'input' | 'weights' | null {
  if (!(e instanceof ApiError)) return null;
  const f = `${e.field ?? ''} ${e.detail}`.toLowerCase();
  if (f.includes('tier_weights') || f.includes('tier weight')) return 'weights';
  if (f.includes('token_ids') || f.includes('block_keys') || f.includes('token') || f.includes('block key')) return 'input';
  return null;
}

/** "Score a prompt": token ids or block keys, optional tier weights → every pod's score and the pool's prefix. */
export function ScoreForm({ instanceId }: { instanceId: string }) {
  const [mode, setMode] = useState<Mode>('tokens');
  const [text, setText] = useState('');
  const [weights, setWeights] = useState('');
  const [inputError, setInputError] = useState<string | undefined>();
  const [weightsError, setWeightsError] = useState<string | undefined>();
  const [serverError, setServerError] = useState<unknown>(null);
  const [busy, setBusy] = useState(false);
  const [result, setResult] = useState<ScoreResponse | null>(null);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    setServerError(null);
    const req: ScoreRequest = { instance_id: instanceId };
    let bad = false;
    try {
      if (mode === 'tokens') {
        const ids = parseTokenIds(text);
        if (ids.length > MAX_SCORE_ITEMS) {
          throw new Error(`at most ${MAX_SCORE_ITEMS.toLocaleString('en-US')} token ids, got ${ids.length.toLocaleString('en-US')}`);
        }
        if (ids.some((n) => n < 0 || n > 0xffffffff)) throw new Error('token ids must be between 0 and 4294967295');
        req.token_ids = ids;
      } else {
        req.block_keys = parseBlockKeys(text);
      }
      setInputError(undefined);
    } catch (err) {
      setInputError(err instanceof Error ? err.message : String(err));
      bad = true;
    }
    try {
      req.tier_weights = parseTierWeights(weights);
      setWeightsError(undefined);
    } catch (err) {
      setWeightsError(err instanceof Error ? err.message : String(err));
      bad = true;
    }
    if (bad) return;
    setBusy(true);
    try {
      setResult(await scorePrompt(req));
    } catch (err) {
      setResult(null);
      setServerError(err);
      const f = blamedField(err);
      if (f === 'input') setInputError(errorMessage(err));
      if (f === 'weights') setWeightsError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  const label = mode === 'tokens' ? 'Token ids' : 'Block keys';
  return (
    <>
      <Form onSubmit={submit} noValidate data-testid="score-form" {...ouia('score-form')}>
        <FormGroup role="radiogroup" isInline fieldId="score-mode" label="The prompt as">
          <Radio id="score-mode-tokens" name="score-mode" label="Token ids" isChecked={mode === 'tokens'}
            onChange={() => { setMode('tokens'); setInputError(undefined); }} data-testid="score-mode-tokens" />
          <Radio id="score-mode-keys" name="score-mode" label="Block keys" isChecked={mode === 'keys'}
            onChange={() => { setMode('keys'); setInputError(undefined); }} data-testid="score-mode-keys" />
        </FormGroup>
        <FormGroup label={label} fieldId="score-input" isRequired>
          <TextArea id="score-input" value={text} onChange={(_e, v) => setText(v)} rows={4} resizeOrientation="vertical"
            validated={inputError ? 'error' : 'default'} data-testid="score-input"
            placeholder={mode === 'tokens' ? '1, 2, 3, 4 … or [1, 2, 3, 4]' : '-4611686018427387904, 123 … or 0x1f2e…'} />
          <Helper error={inputError} helper={mode === 'tokens'
            ? "Comma, space or line separated, or a JSON array: the prompt's token ids as the model's tokenizer gave them"
            : 'Decimal (signed or unsigned 64-bit) or 0x-hex block keys, in prompt order'} />
        </FormGroup>
        <FormGroup label="Tier weights" fieldId="score-weights">
          <TextInput id="score-weights" value={weights} onChange={(_e, v) => setWeights(v)} data-testid="score-weights"
            validated={weightsError ? 'error' : 'default'} placeholder="gpu=1, cpu=0.8" />
          <Helper error={weightsError} helper="Optional; empty uses the server's defaults (gpu 1.0, cpu 0.8, any other tier 1.0)" />
        </FormGroup>
        <ActionGroup>
          <Button type="submit" variant="primary" isLoading={busy} isDisabled={busy} data-testid="score-run" ouiaId="score-run">
            Score
          </Button>
        </ActionGroup>
      </Form>
      {serverError ? (
        <Alert variant="danger" isInline data-testid="score-error" style={{ marginTop: 16 }}
          title={serverError instanceof ApiError && serverError.status === 400 ? 'The server refused this prompt' : 'Scoring failed'}>
          {errorMessage(serverError)}
        </Alert>
      ) : null}
      {result ? <div style={{ marginTop: 16 }}><ScoreResult result={result} /></div> : null}
    </>
  );
}

/** Everything of one instance: where its cache lives, the router's hit rate, and the score form. */
export function EngineCacheView({ instanceId }: { instanceId: string }) {
  const q = useEngineCache(instanceId);
  return (
    <Grid hasGutter>
      <GridItem lg={12}>
        <Card data-testid="where-card"><CardHeader><CardTitle>Where the cache lives</CardTitle></CardHeader>
          <CardBody>
            {q.isPending ? <Loading what="Loading engine caches" />
              : q.isError ? <ErrorState error={q.error} what={`engine caches of ${instanceId}`} retry={() => q.refetch()} />
                : (
                  <>
                    <WhereSummary cache={q.data} />
                    {q.data.pods.some((p) => p.state === 'uncertain') ? (
                      <Alert variant="warning" isInline isPlain data-testid="uncertain-warning" style={{ marginBottom: 8 }}
                        title="Some pods lost events: their blocks may be wrong until they resync (replay or a full clear)" />
                    ) : null}
                    <Title headingLevel="h3" size="md" style={{ margin: '8px 0' }}>Engine pods</Title>
                    <EnginePodsTable pods={q.data.pods} />
                  </>
                )}
            <Title headingLevel="h3" size="md" style={{ margin: '16px 0 8px' }}>Pool (KVPool storage)</Title>
            <PoolTiers instanceId={instanceId} poolKeys={q.data?.pool?.keys} />
          </CardBody>
        </Card>
      </GridItem>
      <GridItem lg={12}>
        <Card data-testid="router-card"><CardHeader><CardTitle>Prefix-aware router hit rate</CardTitle></CardHeader>
          <CardBody>
            {q.isPending ? <Loading what="Loading router hit rate" />
              : q.isError ? <ErrorState error={q.error} what="router hit rate" />
                : <RouterHitRate router={q.data.router} />}
          </CardBody>
        </Card>
      </GridItem>
      <GridItem lg={12}>
        <Card data-testid="score-card"><CardHeader><CardTitle>Score a prompt</CardTitle></CardHeader>
          <CardBody><ScoreForm instanceId={instanceId} /></CardBody>
        </Card>
      </GridItem>
    </Grid>
  );
}

export default function EngineCachePage() {
  const { id = '' } = useParams();
  const session = loadSession();
  // a tenant has no list of engine caches (the metadata plane lists every instance): it comes from its instances
  const list = session && permissions(session.role).engineInstances;
  return (
    <>
      <PageSection>
        <Breadcrumb>
          <BreadcrumbItem>{list ? <Link to="/engine">Engine caches</Link> : <Link to="/instances">Instances</Link>}</BreadcrumbItem>
          <BreadcrumbItem isActive>{id}</BreadcrumbItem>
        </Breadcrumb>
      </PageSection>
      <PageHeader title={<>Engine caches of <span data-testid="engine-instance-id">{id}</span></>}>
        <p style={{ marginTop: 8 }}>
          <Link to={`/instances/${encodeURIComponent(id)}`} data-testid="engine-to-instance">Instance details</Link>
        </p>
      </PageHeader>
      <PageSection>
        <EngineCacheView instanceId={id} />
      </PageSection>
    </>
  );
}
