import { Pairs } from '../components/Pairs';
import { useEffect, useRef, useState, type ChangeEvent, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router-dom';
import {
  ActionGroup, Alert, Button, Card, CardBody, CardHeader, CardTitle, Checkbox, Flex, FlexItem, Form, FormGroup, Grid,
  GridItem, Label, Modal, ModalBody, ModalFooter, ModalHeader, ModalVariant, PageSection, Progress,
  ProgressMeasureLocation, ProgressVariant,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { useQuery, useQueryClient } from '@tanstack/react-query';
import { ApiError, api, errorMessage, request } from '../api/client';
import {
  fetchGroup, fetchMetaInstance, isRunActive, keys, useGroups, useRun, useRuns, useTraces,
} from '../api/hooks';
import { POLICIES, type Group, type Instance, type Page, type Trace, type WhatIfRun } from '../api/types';
import { WhatIfCurveChart } from '../charts';
import { ConflictView } from '../components/ConflictView';
import { Helper, SelectField, TextField } from '../components/FormFields';
import { ErrorState, Loading, PageHeader } from '../components/States';
import { formatBytes, formatCompact, formatCount, formatRate, formatTime, ouia } from '../lib/format';
import { fieldOfProblem, nameProblem, parseInteger } from '../lib/validation';
import {
  buildWhatIfRequest, quotaBytes, runFraction, smallestQuotaText, whatIfChartData, type WhatIfErrors, type WhatIfForm,
} from '../lib/whatif';

/** Content type of a trace upload (Mooncake JSONL: one JSON object per line). */
export const TRACE_UPLOAD_CONTENT_TYPE = 'application/x-ndjson';

const FORM_FIELDS = ['trace', 'policies', 'min', 'max', 'points', 'waterPercent', 'targetPercent', 'targetPolicy'];
/** Server problem fields (request JSON paths) → form fields. */
const SERVER_FIELD: Record<string, keyof WhatIfForm> = {
  trace: 'trace', policies: 'policies', 'capacityRange.min': 'min', 'capacityRange.max': 'max',
  'capacityRange.points': 'points', capacityRange: 'min', capacities: 'min', water: 'waterPercent',
  'target.hitRate': 'targetPercent', 'target.policy': 'targetPolicy', target: 'targetPercent',
};

function traceLabel(t: Trace): string {
  return `${t.name} (${t.kind}, ${formatCount(t.requests)} requests, ${formatCompact(t.blocks)} blocks)`;
}

function TraceUpload({ onUploaded }: { onUploaded: (name: string) => void }) {
  const qc = useQueryClient();
  const [name, setName] = useState('');
  const [file, setFile] = useState<File | null>(null);
  const [errors, setErrors] = useState<{ name?: string; file?: string }>({});
  const [serverError, setServerError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const fileRef = useRef<HTMLInputElement>(null);

  const onFile = (e: ChangeEvent<HTMLInputElement>) => {
    const f = e.target.files?.[0] ?? null;
    setFile(f);
    if (f && !name) setName(f.name.replace(/\.(jsonl|json|txt)$/i, '').replace(/[^A-Za-z0-9._-]/g, '_').replace(/^[.-]+/, ''));
  };

  const upload = async () => {
    const e: { name?: string; file?: string } = {};
    const p = nameProblem(name, 'trace');
    if (p) e.name = `Upload name ${p}`;
    if (!file) e.file = 'Choose a JSONL file ({"timestamp": …, "hash_ids": […]} per line)';
    setErrors(e);
    setServerError(null);
    if (e.name || e.file || !file) return;
    setBusy(true);
    try {
      await request(`/api/v1/meta/whatif/traces?name=${encodeURIComponent(name)}`, {
        method: 'POST', rawBody: await file.text(), contentType: TRACE_UPLOAD_CONTENT_TYPE,
      });
      await qc.invalidateQueries({ queryKey: keys.traces });
      onUploaded(name);
      setFile(null);
      if (fileRef.current) fileRef.current.value = '';
    } catch (err) {
      if (err instanceof ApiError && err.field === 'name') setErrors({ name: err.detail });
      else setServerError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <div data-testid="trace-upload">
      <TextField prefix="whatif" name="uploadName" label="Upload name" value={name} onChange={setName} error={errors.name}
        helper="Name to store the upload under" />
      <FormGroup label="JSONL file" fieldId="whatif-trace-file">
        <input ref={fileRef} id="whatif-trace-file" type="file" accept=".jsonl,.json,.txt,application/x-ndjson"
          onChange={onFile} data-testid="whatif-trace-file" aria-label="JSONL file" />
        <Helper error={errors.file} helper="Mooncake format: one {&quot;timestamp&quot;, &quot;hash_ids&quot;} object per line" />
      </FormGroup>
      <Button variant="secondary" onClick={() => void upload()} isLoading={busy} isDisabled={busy}
        data-testid="whatif-trace-upload" ouiaId="whatif-trace-upload" style={{ marginTop: 8 }}>Upload trace</Button>
      {serverError ? <Alert variant="danger" isInline title={serverError} data-testid="trace-upload-error" style={{ marginTop: 8 }} /> : null}
    </div>
  );
}

function RunForm({ initial }: { initial?: Partial<WhatIfForm> }) {
  const traces = useTraces();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [f, setF] = useState<WhatIfForm>({
    trace: '', policies: ['LRU', 'LFU', 'TTL', 'PREFIX_LRU'], min: '100K', max: '100M', points: '8', waterPercent: '90',
    targetPercent: '30', targetPolicy: 'LRU', ...initial,
  });
  const [errors, setErrors] = useState<WhatIfErrors>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof WhatIfForm>(k: K, v: WhatIfForm[K]) => setF((o) => ({ ...o, [k]: v }));

  useEffect(() => {
    if (!f.trace && traces.data?.length) set('trace', traces.data[0].name);
  }, [traces.data, f.trace]);

  const submit = async (e: FormEvent) => {
    e.preventDefault();
    const r = buildWhatIfRequest(f);
    setErrors(r.errors);
    setFormError(null);
    if (!r.request) return;
    setBusy(true);
    try {
      const run = await api.post<WhatIfRun>('/api/v1/meta/whatif/runs', r.request);
      qc.setQueryData(keys.run(run.id), run);
      await qc.invalidateQueries({ queryKey: keys.runs });
      navigate(`/whatif/${encodeURIComponent(run.id)}`);
    } catch (err) {
      const field = err instanceof ApiError && err.field
        ? SERVER_FIELD[err.field] ?? fieldOfProblem(err.field, FORM_FIELDS) as keyof WhatIfForm | undefined : undefined;
      if (field && err instanceof ApiError) setErrors({ [field]: err.detail });
      else setFormError(errorMessage(err));
    } finally {
      setBusy(false);
    }
  };

  return (
    <Form onSubmit={submit} noValidate data-testid="whatif-form" {...ouia('whatif-form')}>
      {formError ? <Alert variant="danger" isInline title={formError} data-testid="form-error" /> : null}
      {traces.isPending ? <Loading what="Loading traces" />
        : traces.isError ? <ErrorState error={traces.error} what="traces" retry={() => traces.refetch()} />
          : (
            <SelectField prefix="whatif" name="trace" label="Trace" value={f.trace} onChange={(x) => set('trace', x)}
              error={errors.trace}
              options={[{ value: '', label: traces.data.length ? 'Choose a trace' : 'No trace yet: upload one' },
                ...traces.data.map((t) => ({ value: t.name, label: traceLabel(t) }))]} />
          )}
      <TraceUpload onUploaded={(n) => set('trace', n)} />
      <FormGroup role="group" label="Policies" fieldId="whatif-policies" isInline data-testid="whatif-policies">
        {POLICIES.map((p) => (
          <Checkbox key={p} id={`whatif-policy-${p}`} label={p} isChecked={f.policies.includes(p)}
            onChange={(_e, on) => set('policies', on ? [...f.policies.filter((x) => x !== p), p] : f.policies.filter((x) => x !== p))}
            data-testid={`whatif-policy-${p}`} />
        ))}
        <Helper error={errors.policies} />
      </FormGroup>
      <Grid hasGutter md={4}>
        <GridItem>
          <TextField prefix="whatif" name="min" label="Minimum capacity (tokens)" value={f.min} onChange={(x) => set('min', x)}
            error={errors.min} helper="K, M, G suffixes: 100K = 100,000" />
        </GridItem>
        <GridItem>
          <TextField prefix="whatif" name="max" label="Maximum capacity (tokens)" value={f.max} onChange={(x) => set('max', x)}
            error={errors.max} />
        </GridItem>
        <GridItem>
          <TextField prefix="whatif" name="points" label="Points" value={f.points} onChange={(x) => set('points', x)}
            error={errors.points} helper="Log-spaced between min and max" inputMode="numeric" />
        </GridItem>
        <GridItem>
          <TextField prefix="whatif" name="waterPercent" label="Water level (%)" value={f.waterPercent}
            onChange={(x) => set('waterPercent', x)} error={errors.waterPercent} helper="Eviction keeps usage below this" />
        </GridItem>
        <GridItem>
          <TextField prefix="whatif" name="targetPercent" label="Target hit rate (%)" value={f.targetPercent}
            onChange={(x) => set('targetPercent', x)} error={errors.targetPercent} helper="Empty: no target" />
        </GridItem>
        <GridItem>
          <SelectField prefix="whatif" name="targetPolicy" label="Target policy" value={f.targetPolicy}
            onChange={(x) => set('targetPolicy', x)} error={errors.targetPolicy}
            options={POLICIES.map((p) => ({ value: p, label: p }))} />
        </GridItem>
      </Grid>
      <ActionGroup>
        <Button type="submit" variant="primary" isLoading={busy} isDisabled={busy} data-testid="whatif-run"
          ouiaId="whatif-run">Run</Button>
      </ActionGroup>
    </Form>
  );
}

/** The group's instances' bytes per block (metadata plane), to turn blocks into a byte quota. */
function useGroupBytesPerBlock(group: string) {
  return useQuery({
    queryKey: ['whatif', 'bytes-per-block', group],
    enabled: !!group,
    queryFn: async () => {
      const list = await api.get<Page<Instance>>(`/api/v1/instances?group=${encodeURIComponent(group)}&size=50`);
      const values: number[] = [];
      for (const i of list.items.slice(0, 10)) {
        try {
          const m = await fetchMetaInstance(i.instanceId);
          if (m.bytes_per_block > 0) values.push(m.bytes_per_block);
        } catch {
          // an instance the metadata plane does not know yet: skip it
        }
      }
      return { values: [...new Set(values)], instances: list.items.length };
    },
  });
}

function ApplyModal({ group, bytes, onClose }: { group: string; bytes: number; onClose: () => void }) {
  const qc = useQueryClient();
  const cur = useQuery({ queryKey: keys.group(group), queryFn: () => fetchGroup(group), staleTime: 0 });
  const [busy, setBusy] = useState(false);
  const [error, setError] = useState<string | null>(null);
  const [conflict, setConflict] = useState<{ current: Group; etag: string | null; detail: string } | null>(null);
  const [done, setDone] = useState(false);

  const put = async (etag: string | null) => {
    setBusy(true);
    setError(null);
    try {
      await api.put(`/api/v1/instance-groups/${encodeURIComponent(group)}`, { quotaBytes: bytes }, etag);
      await qc.invalidateQueries({ queryKey: keys.groups });
      await qc.invalidateQueries({ queryKey: keys.summary });
      setConflict(null);
      setDone(true);
    } catch (e) {
      if (e instanceof ApiError && e.status === 412) {
        try {
          const fresh = await fetchGroup(group);
          setConflict({ current: fresh.data, etag: fresh.etag, detail: e.detail });
        } catch (e2) {
          setError(`${e.detail}; reloading the group failed: ${errorMessage(e2)}`);
        }
      } else {
        setError(errorMessage(e));
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal variant={ModalVariant.medium} isOpen onClose={onClose} aria-labelledby="apply-title" data-testid="whatif-apply-modal"
      ouiaId="whatif-apply-modal">
      <ModalHeader title={`Apply the quota to group ${group}?`} labelId="apply-title" />
      <ModalBody>
        {done ? (
          <Alert variant="success" isInline title={`Group ${group} now has a quota of ${formatBytes(bytes)} (${formatCount(bytes)} bytes).`}
            data-testid="whatif-applied" />
        ) : cur.isPending ? <Loading what="Loading group" />
          : cur.isError ? <ErrorState error={cur.error} what={`group ${group}`} retry={() => cur.refetch()} />
            : conflict ? (
              <ConflictView what={`group ${group}`} detail={conflict.detail}
                rows={[{ field: 'quotaBytes', label: 'Quota (bytes)', current: `${conflict.current.quotaBytes} (${formatBytes(conflict.current.quotaBytes)})`,
                  mine: `${bytes} (${formatBytes(bytes)})`, original: cur.data ? `${cur.data.data.quotaBytes} (${formatBytes(cur.data.data.quotaBytes)})` : undefined }]}
                onReapply={() => void put(conflict.etag)} onDiscard={onClose} busy={busy} />
            ) : (
              <p data-testid="whatif-apply-summary">
                The quota of <strong>{group}</strong> changes from <strong>{formatBytes(cur.data.data.quotaBytes)}</strong>
                {' '}({formatCount(cur.data.data.quotaBytes)} bytes) to <strong>{formatBytes(bytes)}</strong> ({formatCount(bytes)} bytes).
                {bytes < (cur.data.data.usage?.usedBytes ?? 0)
                  ? ` The group uses ${formatBytes(cur.data.data.usage?.usedBytes)} now: the server refuses a quota below its usage.` : ''}
              </p>
            )}
        {error ? <Alert variant="danger" isInline title={error} data-testid="modal-error" style={{ marginTop: 16 }} /> : null}
      </ModalBody>
      <ModalFooter>
        {!done && !conflict ? (
          <Button variant="primary" onClick={() => void put(cur.data?.etag ?? null)} isLoading={busy}
            isDisabled={busy || !cur.isSuccess} data-testid="whatif-apply-confirm" ouiaId="whatif-apply-confirm">Apply</Button>
        ) : null}
        <Button variant="link" onClick={onClose} data-testid="whatif-apply-close" ouiaId="whatif-apply-close">{done ? 'Close' : 'Cancel'}</Button>
      </ModalFooter>
    </Modal>
  );
}

function SmallestQuota({ run }: { run: WhatIfRun }) {
  const groups = useGroups();
  const [group, setGroup] = useState('');
  const [bpb, setBpb] = useState('');
  const [bpbTouched, setBpbTouched] = useState(false);
  const [applying, setApplying] = useState(false);
  const found = useGroupBytesPerBlock(group);

  useEffect(() => {
    if (!group && groups.data?.items.length) setGroup(groups.data.items[0].name);
  }, [groups.data, group]);
  useEffect(() => {
    if (!bpbTouched && found.data?.values.length) setBpb(String(found.data.values[0]));
  }, [found.data, bpbTouched]);

  const bytesPerBlock = parseInteger(bpb) ?? null;
  const bpbError = bpb.trim() && (bytesPerBlock === null || bytesPerBlock <= 0) ? 'a whole number of bytes above 0' : undefined;
  const s = run.smallest;
  const bytes = s?.reached ? quotaBytes(s.capacityBlocks, bytesPerBlock && bytesPerBlock > 0 ? bytesPerBlock : null) : null;

  return (
    <Card data-testid="whatif-smallest-card">
      <CardHeader><CardTitle>Smallest quota for the target</CardTitle></CardHeader>
      <CardBody>
        <Alert variant={s?.reached ? 'success' : 'info'} isInline isPlain
          title={smallestQuotaText(s, bytesPerBlock && bytesPerBlock > 0 ? bytesPerBlock : null)} data-testid="whatif-smallest" />
        {s?.note ? <p style={{ marginTop: 4 }} data-testid="whatif-smallest-note">{s.note}</p> : null}
        <Grid hasGutter md={6} style={{ marginTop: 12 }}>
          <GridItem>
            {groups.isError ? <ErrorState error={groups.error} what="groups" />
              : (
                <SelectField prefix="whatif" name="group" label="Group" value={group} onChange={(x) => { setGroup(x); setBpbTouched(false); }}
                  options={[{ value: '', label: 'Choose a group' }, ...(groups.data?.items ?? []).map((g) => ({ value: g.name, label: g.name }))]}
                  helper="Its instances give the bytes per block; the quota applies to it" />
              )}
          </GridItem>
          <GridItem>
            <TextField prefix="whatif" name="bytesPerBlock" label="Bytes per block" value={bpb}
              onChange={(x) => { setBpb(x); setBpbTouched(true); }} error={bpbError} inputMode="numeric"
              helper={found.isFetching ? 'Looking up the group\'s instances…'
                : found.data ? (found.data.values.length === 0 ? `No instance of ${group} reports bytes per block; enter it`
                  : found.data.values.length > 1 ? `The group's instances differ: ${found.data.values.map(formatCount).join(', ')}`
                    : `From ${group}'s instances`) : 'Bytes one block of the model takes'} />
          </GridItem>
        </Grid>
        <Button variant="primary" isDisabled={!bytes || !group} onClick={() => setApplying(true)} data-testid="whatif-apply"
          ouiaId="whatif-apply" style={{ marginTop: 12 }}>Apply to group</Button>
        {applying && bytes && group ? <ApplyModal group={group} bytes={bytes} onClose={() => setApplying(false)} /> : null}
      </CardBody>
    </Card>
  );
}

function RunView({ id }: { id: string }) {
  const q = useRun(id);
  const qc = useQueryClient();
  const navigate = useNavigate();
  const [cancelError, setCancelError] = useState<string | null>(null);
  const [cancelling, setCancelling] = useState(false);
  if (q.isPending) return <Loading what="Loading run" />;
  if (q.isError) return <ErrorState error={q.error} what={`run ${id}`} retry={() => q.refetch()} />;
  const run = q.data;
  const active = isRunActive(run.state);
  const frac = runFraction(run);
  const chart = whatIfChartData(run.results, run.ceiling);

  const cancel = async () => {
    setCancelling(true);
    setCancelError(null);
    try {
      await api.del(`/api/v1/meta/whatif/runs/${encodeURIComponent(id)}`);
      await qc.invalidateQueries({ queryKey: keys.run(id) });
      await qc.invalidateQueries({ queryKey: keys.runs });
    } catch (e) {
      setCancelError(errorMessage(e));
    } finally {
      setCancelling(false);
    }
  };

  const forget = async () => {
    try {
      await api.del(`/api/v1/meta/whatif/runs/${encodeURIComponent(id)}`);
      await qc.invalidateQueries({ queryKey: keys.runs });
      navigate('/whatif');
    } catch (e) {
      setCancelError(errorMessage(e));
    }
  };

  const variant = run.state === 'failed' ? ProgressVariant.danger : run.state === 'done' ? ProgressVariant.success
    : run.state === 'cancelled' ? ProgressVariant.warning : undefined;
  return (
    <div data-testid="whatif-run-view" data-state={run.state}>
      <Card>
        <CardHeader>
          <Flex justifyContent={{ default: 'justifyContentSpaceBetween' }} style={{ width: '100%' }}>
            <FlexItem><CardTitle>Run <code data-testid="whatif-run-id">{run.id}</code>{' '}
              <Label data-testid="whatif-state" color={run.state === 'done' ? 'green' : run.state === 'failed' ? 'red' : run.state === 'cancelled' ? 'orange' : 'blue'}>{run.state}</Label></CardTitle></FlexItem>
            <FlexItem>
              {active ? (
                <Button variant="danger" onClick={() => void cancel()} isLoading={cancelling} isDisabled={cancelling}
                  data-testid="whatif-cancel" ouiaId="whatif-cancel">Cancel</Button>
              ) : (
                <Button variant="secondary" onClick={() => void forget()} data-testid="whatif-forget" ouiaId="whatif-forget">Forget run</Button>
              )}
            </FlexItem>
          </Flex>
        </CardHeader>
        <CardBody>
          <Progress value={Math.round(frac * 1000) / 10} title="Replay progress" measureLocation={ProgressMeasureLocation.outside}
            variant={variant} data-testid="whatif-progress" aria-label="Replay progress"
            helperText={run.progress ? `${run.progress.runsDone} of ${run.progress.runsTotal} replays, ${formatCompact(run.progress.accessesDone)} of ${formatCompact(run.progress.accessesTotal)} block accesses` : undefined} />
          {cancelError ? <Alert variant="danger" isInline title={cancelError} style={{ marginTop: 8 }} /> : null}
          {run.error ? <Alert variant="danger" isInline title={`The run failed: ${run.error}`} data-testid="whatif-error" style={{ marginTop: 8 }} /> : null}
          <Pairs isCompact isHorizontal columnModifier={{ default: '2Col' }} style={{ marginTop: 12 }} items={[
              ['Trace', run.trace ? `${run.trace.name}: ${formatCount(run.trace.requests)} requests, ${formatCount(run.trace.blocks)} blocks${run.trace.blockTokens ? `, ${run.trace.blockTokens} tokens per block` : ''}` : run.request?.trace ?? '–'],
              ['Policies', (run.request?.policies ?? []).join(', ') || '–'],
              ['Started', formatTime(run.startedAt)],
              ['Elapsed', run.elapsedSeconds !== null && run.elapsedSeconds !== undefined ? `${run.elapsedSeconds.toFixed(1)} s` : '–'],
              ['Speed', run.accessesPerSecond ? `${formatCompact(run.accessesPerSecond)} block accesses/s` : '–'],
              ['Unbounded ceiling', formatRate(run.ceiling?.hitRate)],
            ]} />
        </CardBody>
      </Card>
      <Card style={{ marginTop: 16 }}>
        <CardHeader><CardTitle>Hit rate vs capacity</CardTitle>
          <span style={{ color: 'var(--pf-t--global--text--color--subtle)' }}>capacity in tokens, log scale; dashed: the unbounded ceiling</span>
        </CardHeader>
        <CardBody>
          <WhatIfCurveChart data={chart} />
        </CardBody>
      </Card>
      {run.state === 'done' || run.smallest ? <div style={{ marginTop: 16 }}><SmallestQuota run={run} /></div> : null}
      {(run.results ?? []).length > 0 ? (
        <Card style={{ marginTop: 16 }}>
          <CardHeader><CardTitle>Results</CardTitle></CardHeader>
          <CardBody>
            <Table aria-label="What-if results" variant="compact" ouiaId="whatif-results-table" data-testid="whatif-results-table">
              <Thead>
                <Tr>
                  <Th>Policy</Th>
                  <Th>Capacity (tokens)</Th>
                  <Th>Blocks</Th>
                  <Th>Hit rate</Th>
                  <Th>Written</Th>
                  <Th>Evicted</Th>
                  <Th>Refused</Th>
                </Tr>
              </Thead>
              <Tbody>
                {chart.series.flatMap((s) => s.points.map((p) => ({ p, r: run.results!.find((r) => r.policy === s.policy && r.capacityTokens === p.x) })))
                  .map(({ p, r }) => (
                    <Tr key={`${p.policy}-${p.x}`} data-testid={`whatif-result-${p.policy}-${p.x}`}>
                      <Td dataLabel="Policy">{p.policy}</Td>
                      <Td dataLabel="Capacity (tokens)">{formatCount(p.x)}</Td>
                      <Td dataLabel="Blocks">{formatCount(p.blocks)}</Td>
                      <Td dataLabel="Hit rate">{formatRate(p.y, 2)}</Td>
                      <Td dataLabel="Written">{formatCount(r?.writtenBlocks)}</Td>
                      <Td dataLabel="Evicted">{formatCount(r?.evictedBlocks)}</Td>
                      <Td dataLabel="Refused">{formatCount(r?.refusedBlocks)}</Td>
                    </Tr>
                  ))}
              </Tbody>
            </Table>
          </CardBody>
        </Card>
      ) : null}
    </div>
  );
}

function RecentRuns({ current }: { current?: string }) {
  const q = useRuns();
  if (q.isPending) return <Loading what="Loading runs" />;
  if (q.isError) return <ErrorState error={q.error} what="recent runs" retry={() => q.refetch()} />;
  if (q.data.length === 0) return <p data-testid="whatif-runs-empty">No runs yet.</p>;
  return (
    <Table aria-label="Recent runs" variant="compact" ouiaId="whatif-runs-table" data-testid="whatif-runs-table">
      <Thead>
        <Tr>
          <Th>Run</Th>
          <Th>Trace</Th>
          <Th>State</Th>
          <Th>Progress</Th>
          <Th>Started</Th>
        </Tr>
      </Thead>
      <Tbody>
        {q.data.map((r) => (
          <Tr key={r.id} isRowSelected={r.id === current} data-testid={`whatif-run-row-${r.id}`}>
            <Td dataLabel="Run"><Link to={`/whatif/${encodeURIComponent(r.id)}`}>{r.id}</Link></Td>
            <Td dataLabel="Trace">{r.trace?.name ?? r.request?.trace ?? '–'}</Td>
            <Td dataLabel="State">{r.state}</Td>
            <Td dataLabel="Progress">{Math.round(runFraction(r) * 100)} %</Td>
            <Td dataLabel="Started">{formatTime(r.startedAt)}</Td>
          </Tr>
        ))}
      </Tbody>
    </Table>
  );
}

export default function WhatIf() {
  const { runId } = useParams();
  return (
    <>
      <PageHeader title="What-if capacity">
        <p style={{ marginTop: 8 }}>
          Replays a trace through the metadata plane's real read, write and reclaim paths at several capacities and
          policies, and tells the smallest quota that reaches a hit rate.
        </p>
      </PageHeader>
      <PageSection>
        <Grid hasGutter>
          <GridItem xl={7}>
            <Card><CardHeader><CardTitle>New run</CardTitle></CardHeader><CardBody><RunForm /></CardBody></Card>
          </GridItem>
          <GridItem xl={5}>
            <Card><CardHeader><CardTitle>Recent runs</CardTitle></CardHeader>
              <CardBody><RecentRuns current={runId} /></CardBody></Card>
          </GridItem>
          <GridItem xl={12}>
            {runId ? <RunView key={runId} id={runId} />
              : <Alert variant="info" isInline isPlain title="Choose a trace, policies and a capacity range, then Run. Runs go on in the background: leave and come back, or reload." />}
          </GridItem>
        </Grid>
      </PageSection>
    </>
  );
}
