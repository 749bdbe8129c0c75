import { useState, type FormEvent } from 'react';
import {
  Alert, Button, Form, FormGroup, Label, Modal, ModalBody, ModalFooter, ModalHeader, ModalVariant, PageSection, Switch,
  TextArea, Toolbar, ToolbarContent, ToolbarItem,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { useQueryClient } from '@tanstack/react-query';
import { ApiError, api, errorMessage } from '../api/client';
import { fetchStorage, keys, useStatsSummary, useStorages } from '../api/hooks';
import {
  ALL_STORAGE_TYPES, EVENT_REPORT_FIELDS, MAX_EVENT_REPORT_MS, isEventReportType, type Storage, type StorageInput,
} from '../api/types';
import { ConfirmModal } from '../components/ConfirmModal';
import { Helper, SelectField, TextField } from '../components/FormFields';
import { Empty, ErrorState, Loading, PageHeader } from '../components/States';
import { formatBytes, ouia } from '../lib/format';
import { hasErrors, intProblem, nameProblem, serverErrors, type FieldErrors } from '../lib/validation';

const TEMPLATES: Record<string, Record<string, unknown>> = {
  nfs: { root_path: '/var/lib/kvpool/nfs_01/', key_count_per_file: 8 },
  hf3fs: { mountpoint: '/3fs', root_dir: 'kvpool/' },
  mooncake: { local_hostname: 'localhost', metadata_connstring: 'http://127.0.0.1:8080/metadata', protocol: 'tcp',
    master_service_entry: '127.0.0.1:50051' },
  tair_mem_pool: { domain: 'localhost' },
  vcns_hf3fs: { mountpoint: '/3fs', root_dir: 'kvpool/', remote_host: 'localhost', remote_port: 8000,
    meta_storage_uri: 'redis://localhost:6379' },
};

const SPEC_MEMBERS = ['nfs.', 'threefs.', 'mooncake.', 'tair_mem_pool.', 'vcnsthreefs.', 'event_report.'];
const NFS_FIELDS = ['spec.root_path', 'spec.key_count_per_file'];
const REPORT_FIELDS = EVENT_REPORT_FIELDS.map((f) => `spec.${f.key}`);
const STORAGE_FIELDS = ['name', 'type', 'enabled', 'spec', ...NFS_FIELDS, ...REPORT_FIELDS];

/** The form fields a storage type shows (a refusal naming another lands on the form). */
function formFields(type: string): string[] {
  const own = type === 'nfs' ? NFS_FIELDS : isEventReportType(type) ? REPORT_FIELDS : [];
  return STORAGE_FIELDS.filter((f) => !f.startsWith('spec.') || own.includes(f));
}

/** The control plane names spec fields by their KVCM oneof member (nfs.root_path): the form calls them spec.*. */
export function storageProblemField(field: string | undefined): string | undefined {
  if (!field) return undefined;
  if (field === 'global_unique_name') return 'name';
  if (field === 'storage_spec') return 'spec';
  const m = SPEC_MEMBERS.find((p) => field.startsWith(p));
  return m ? `spec.${field.slice(m.length)}` : field;
}

interface StorageFormValues {
  name: string;
  type: string;
  enabled: boolean;
  rootPath: string;
  keysPerFile: string;
  specJson: string;
  /** Event-report durations as typed (ms), by spec field; blank = KVCM's default. */
  report?: Record<string, string>;
}

function reportForm(spec?: Record<string, unknown>): Record<string, string> {
  const r: Record<string, string> = {};
  for (const f of EVENT_REPORT_FIELDS) r[f.key] = String(spec?.[f.key] ?? f.dflt);
  return r;
}

function toForm(s?: Storage): StorageFormValues {
  const type = s?.type ?? 'nfs';
  const spec = s?.spec ?? TEMPLATES[type] ?? {};
  return {
    name: s?.name ?? '',
    type,
    enabled: s?.enabled ?? true,
    rootPath: String((spec as { root_path?: string }).root_path ?? ''),
    keysPerFile: String((spec as { key_count_per_file?: number }).key_count_per_file ?? 8),
    specJson: JSON.stringify(spec ?? {}, null, 2),
    report: reportForm(isEventReportType(type) ? s?.spec : undefined),
  };
}

export function validateStorageForm(v: StorageFormValues, isNew: boolean): { errors: FieldErrors; input?: StorageInput } {
  const e: FieldErrors = {};
  if (isNew) {
    const p = nameProblem(v.name, 'storage');
    if (p) e.name = `Name ${p}`;
  }
  if (!(ALL_STORAGE_TYPES as readonly string[]).includes(v.type)) e.type = 'Choose a type';
  let spec: Record<string, unknown> = {};
  if (v.type === 'nfs') {
    if (!v.rootPath.trim()) e['spec.root_path'] = 'Root path is required';
    const k = intProblem(v.keysPerFile, 0, 1 << 20);
    if (k) e['spec.key_count_per_file'] = `Keys per file ${k}`;
    spec = { root_path: v.rootPath.trim(), key_count_per_file: Number(v.keysPerFile) };
  } else if (isEventReportType(v.type)) {
    // the control plane's bounds: snapshot_min_interval_ms and the liveness pair > 0, all at most a day
    for (const f of EVENT_REPORT_FIELDS) {
      const raw = (v.report?.[f.key] ?? '').trim();
      const p = intProblem(raw, f.min, MAX_EVENT_REPORT_MS, false);
      if (p) e[`spec.${f.key}`] = `${f.label} ${p}`;
      else if (raw) spec[f.key] = Number(raw);
    }
  } else {
    try {
      const j = JSON.parse(v.specJson || '{}');
      if (!j || typeof j !== 'object' || Array.isArray(j)) throw new Error('must be a JSON object');
      spec = j;
    } catch (err) {
      e.spec = `Spec ${err instanceof Error ? err.message : err}`;
    }
  }
  if (hasErrors(e)) return { errors: e };
  return { errors: e, input: { name: v.name, type: v.type, enabled: v.enabled, spec } };
}

function StorageFormModal({ storage, onClose }: { storage?: { data: Storage; etag: string | null }; onClose: () => void }) {
  const isNew = !storage;
  const qc = useQueryClient();
  const [v, setV] = useState<StorageFormValues>(toForm(storage?.data));
  const [errors, setErrors] = useState<FieldErrors>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = <K extends keyof StorageFormValues>(k: K, x: StorageFormValues[K]) => setV((o) => ({ ...o, [k]: x }));

  const submit = async (ev?: FormEvent) => {
    ev?.preventDefault();
    const r = validateStorageForm(v, isNew);
    setErrors(r.errors);
    setFormError(null);
    if (!r.input) return;
    setBusy(true);
    try {
      if (isNew) {
        await api.post('/api/v1/storages', r.input);
      } else {
        await api.put(`/api/v1/storages/${encodeURIComponent(v.name)}`, r.input, storage?.etag);
      }
      await qc.invalidateQueries({ queryKey: keys.storages });
      onClose();
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) {
        setFormError(`${err.detail}. Someone changed this storage: close and open it again to see the current values.`);
      } else {
        const field = err instanceof ApiError ? storageProblemField(err.field) : undefined;
        const s = serverErrors(err instanceof ApiError ? new ApiError(err.status, { ...err.problem, field }) : err,
          formFields(v.type));
        setErrors(s.fields);
        setFormError(s.form ?? null);
      }
    } finally {
      setBusy(false);
    }
  };

  return (
    <Modal variant={ModalVariant.medium} isOpen onClose={onClose} aria-labelledby="storage-form-title"
      data-testid="storage-modal" ouiaId="storage-modal">
      <ModalHeader title={isNew ? 'Add storage' : `Edit storage ${v.name}`} labelId="storage-form-title" />
      <ModalBody>
        <Form id="storage-form" onSubmit={submit} noValidate data-testid="storage-form" {...ouia('storage-form')}>
          {formError ? <Alert variant="danger" isInline title={formError} data-testid="form-error" /> : null}
          <TextField prefix="storage" name="name" label="Name" value={v.name} onChange={(x) => set('name', x)}
            error={errors.name} isRequired isDisabled={!isNew} />
          <SelectField prefix="storage" name="type" label="Type" value={v.type}
            onChange={(x) => setV((o) => ({ ...o, type: x, specJson: JSON.stringify(TEMPLATES[x] ?? {}, null, 2) }))}
            error={errors.type} options={ALL_STORAGE_TYPES.map((t) => ({ value: t, label: t }))} />
          <FormGroup label="Enabled" fieldId="storage-enabled">
            <Switch id="storage-enabled" aria-label="Enabled" label="Used for new writes and reads" isChecked={v.enabled}
              onChange={(_e, on) => set('enabled', on)} data-testid="storage-enabled" ouiaId="storage-enabled" />
          </FormGroup>
          {v.type === 'nfs' ? (
            <>
              <TextField prefix="storage" name="spec.root_path" label="Root path" value={v.rootPath}
                onChange={(x) => set('rootPath', x)} error={errors['spec.root_path']} isRequired
                helper="A directory every data agent and the metadata plane reach" />
              <TextField prefix="storage" name="spec.key_count_per_file" label="Keys per file" value={v.keysPerFile}
                onChange={(x) => set('keysPerFile', x)} error={errors['spec.key_count_per_file']} inputMode="numeric" />
              {errors.spec ? <Helper error={errors.spec} /> : null}
            </>
          ) : isEventReportType(v.type) ? (
            <>
              <Alert variant="info" isInline isPlain data-testid="storage-report-note"
                title={`Engines report their own caches here (KVCM ReportEvent); no bytes are stored. ${v.type === 'event_report_l2'
                  ? 'L2: peer-shareable caches.' : 'L1P5: caches owned by the engine on its host.'}`} />
              {EVENT_REPORT_FIELDS.map((f) => (
                <TextField key={f.key} prefix="storage" name={`spec.${f.key}`} label={f.label} value={v.report?.[f.key] ?? ''}
                  onChange={(x) => setV((o) => ({ ...o, report: { ...o.report, [f.key]: x } }))}
                  error={errors[`spec.${f.key}`]} inputMode="numeric"
                  helper={`Default ${f.dflt.toLocaleString('en-US')}; ${f.min > 0 ? 'more than 0' : '0 or more'}, at most one day`} />
              ))}
              {errors.spec ? <Helper error={errors.spec} /> : null}
            </>
          ) : (
            <FormGroup label="Spec (JSON)" fieldId="storage-spec" isRequired>
              <TextArea id="storage-spec" value={v.specJson} onChange={(_e, x) => set('specJson', x)} rows={8}
                validated={errors.spec ? 'error' : 'default'} data-testid="storage-spec" resizeOrientation="vertical" />
              <Helper error={errors.spec} helper={`Fields of the ${v.type} spec, snake_case`} />
            </FormGroup>
          )}
        </Form>
      </ModalBody>
      <ModalFooter>
        <Button variant="primary" type="submit" form="storage-form" isLoading={busy} isDisabled={busy}
          data-testid="storage-save" ouiaId="storage-save">{isNew ? 'Add' : 'Save'}</Button>
        <Button variant="link" onClick={onClose} data-testid="storage-cancel" ouiaId="storage-cancel">Cancel</Button>
      </ModalFooter>
    </Modal>
  );
}

export default function Storages() {
  const q = useStorages({ refetchInterval: 10_000 });
  const summary = useStatsSummary();
  const qc = useQueryClient();
  const [editing, setEditing] = useState<{ data: Storage; etag: string | null } | 'new' | null>(null);
  const [deleting, setDeleting] = useState<Storage | null>(null);
  const [toggleError, setToggleError] = useState<string | null>(null);
  const [toggling, setToggling] = useState<string | null>(null);

  const usageByType = new Map<string, number>();
  for (const g of summary.data?.groups ?? []) {
    for (const [t, b] of Object.entries(g.usageByType ?? {})) usageByType.set(t, (usageByType.get(t) ?? 0) + b);
  }
  const perType = new Map<string, number>();
  for (const s of q.data?.items ?? []) perType.set(s.type, (perType.get(s.type) ?? 0) + 1);

  const toggle = async (s: Storage, on: boolean) => {
    setToggleError(null);
    setToggling(s.name);
    try {
      const cur = await fetchStorage(s.name);
      await api.put(`/api/v1/storages/${encodeURIComponent(s.name)}`,
        { type: cur.data.type, spec: cur.data.spec, enabled: on, checkAvailableWhenOpen: cur.data.checkAvailableWhenOpen },
        cur.etag);
      await qc.invalidateQueries({ queryKey: keys.storages });
    } catch (e) {
      setToggleError(`${on ? 'Enabling' : 'Disabling'} ${s.name} failed: ${errorMessage(e)}`);
    } finally {
      setToggling(null);
    }
  };

  const openEdit = async (s: Storage) => {
    setToggleError(null);
    try {
      setEditing(await fetchStorage(s.name));
    } catch (e) {
      setToggleError(`Loading ${s.name} failed: ${errorMessage(e)}`);
    }
  };

  return (
    <>
      <PageHeader title="Storages" />
      <PageSection>
        <Toolbar>
          <ToolbarContent>
            <ToolbarItem>
              <Button variant="primary" onClick={() => setEditing('new')} data-testid="storage-create"
                ouiaId="storage-create">Add storage</Button>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
        {toggleError ? <Alert variant="danger" isInline title={toggleError} data-testid="storage-error" /> : null}
        {q.isPending ? <Loading what="Loading storages" />
          : q.isError ? <ErrorState error={q.error} what="storages" retry={() => q.refetch()} />
            : q.data.items.length === 0 ? (
              <Empty title="No storages" testId="storages-empty">Add a storage for the blocks' bytes (nfs: a directory).</Empty>
            ) : (
              <Table aria-label="Storages" ouiaId="storages-table" data-testid="storages-table" variant="compact">
                <Thead>
                  <Tr>
                    <Th>Name</Th>
                    <Th>Type</Th>
                    <Th>Health</Th>
                    <Th>Enabled</Th>
                    <Th>Spec</Th>
                    <Th modifier="wrap" info={{ tooltip: 'Bytes the groups hold on storages of this type (from the usage reports)' }}>Usage</Th>
                    <Th screenReaderText="Actions" />
                  </Tr>
                </Thead>
                <Tbody>
                  {q.data.items.map((s) => (
                    <Tr key={s.name} data-testid={`storage-row-${s.name}`} ouiaId={`storage-row-${s.name}`}>
                      <Td dataLabel="Name">{s.name}</Td>
                      <Td dataLabel="Type">{s.type}</Td>
                      <Td dataLabel="Health" data-testid="storage-health">
                        {s.enabled ? <Label color="green">in use</Label> : <Label color="grey">disabled</Label>}
                      </Td>
                      <Td dataLabel="Enabled">
                        <Switch id={`storage-toggle-${s.name}`} aria-label={`Enable/disable ${s.name}`} isChecked={s.enabled}
                          isDisabled={toggling === s.name} onChange={(_e, on) => void toggle(s, on)}
                          data-testid={`storage-toggle-${s.name}`} ouiaId={`storage-toggle-${s.name}`} />
                      </Td>
                      <Td dataLabel="Spec"><code>{Object.entries(s.spec ?? {}).map(([k, x]) => `${k}=${String(x)}`).join(' ')}</code></Td>
                      <Td dataLabel="Usage (type)" data-testid="storage-usage">
                        {isEventReportType(s.type) ? 'no bytes (engine reports)' : usageByType.has(s.type) ? formatBytes(usageByType.get(s.type))
                          + ((perType.get(s.type) ?? 0) > 1 ? ` (all ${s.type})` : '') : '–'}
                      </Td>
                      <Td isActionCell style={{ whiteSpace: 'nowrap' }}>
                        <Button variant="secondary" size="sm" onClick={() => void openEdit(s)} data-testid={`storage-edit-${s.name}`}
                          ouiaId={`storage-edit-${s.name}`}>Edit</Button>{' '}
                        <Button variant="danger" size="sm" onClick={() => setDeleting(s)} data-testid={`storage-delete-${s.name}`}
                          ouiaId={`storage-delete-${s.name}`}>Delete</Button>
                      </Td>
                    </Tr>
                  ))}
                </Tbody>
              </Table>
            )}
      </PageSection>
      {editing ? <StorageFormModal storage={editing === 'new' ? undefined : editing} onClose={() => setEditing(null)} /> : null}
      {deleting ? (
        <ConfirmModal title={`Delete storage ${deleting.name}?`} confirmLabel="Delete" danger testId="storage-delete-modal"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api.del(`/api/v1/storages/${encodeURIComponent(deleting.name)}`,
              deleting.version !== undefined ? `"${deleting.version}"` : undefined);
            await qc.invalidateQueries({ queryKey: keys.storages });
          }}>
          The server refuses while an instance group lists it as a candidate (storage or event-report).
        </ConfirmModal>
      ) : null}
    </>
  );
}
