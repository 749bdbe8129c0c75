import { useState, type FormEvent } from 'react';
import { Link, useNavigate, useParams } from 'react-router-dom';
import {
  ActionGroup, Alert, Breadcrumb, BreadcrumbItem, Button, Checkbox, Form, FormFieldGroupExpandable,
  FormFieldGroupHeader, FormGroup, FormSection, Grid, GridItem, Label, PageSection, Switch,
} from '@patternfly/react-core';
import { useQueryClient } from '@tanstack/react-query';
import { ApiError, api } from '../api/client';
import { fetchGroup, keys, useGroup, useStorages } from '../api/hooks';
import { POLICIES, STORAGE_TYPES, isEventReportType, type Group } from '../api/types';
import { ConflictView } from '../components/ConflictView';
import { Helper, SelectField, TextField } from '../components/FormFields';
import { ErrorState, Loading, PageHeader } from '../components/States';
import { formatBytes, ouia } from '../lib/format';
import {
  GROUP_FIELDS, emptyGroupForm, groupConflictRows, groupFormToInput, groupToForm, validateGroupForm,
  type GroupFormValues,
} from '../lib/groupForm';
import { hasErrors, parseBytes, serverErrors, type FieldErrors } from '../lib/validation';

const P = 'group';

export default function GroupEdit() {
  const { name } = useParams();
  const isNew = !name;
  const q = useGroup(name ?? '', { enabled: !isNew, staleTime: 0, refetchOnWindowFocus: false });
  if (isNew) {
    return <GroupForm initial={emptyGroupForm()} etag={null} isNew />;
  }
  if (q.isPending) return <Loading what="Loading group" />;
  if (q.isError) {
    return <PageSection><ErrorState error={q.error} what={`group ${name}`} retry={() => q.refetch()} /></PageSection>;
  }
  // keyed by name only: a later refetch must not reset what the user typed (a stale edit shows as a conflict on save)
  return <GroupForm key={name} initial={groupToForm(q.data.data)} etag={q.data.etag} isNew={false} />;
}

interface Conflict {
  current: Group;
  etag: string | null;
  detail: string;
}

function GroupForm({ initial, etag: initialEtag, isNew }: { initial: GroupFormValues; etag: string | null; isNew: boolean }) {
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [v, setV] = useState<GroupFormValues>(initial);
  const [etag, setEtag] = useState<string | null>(initialEtag);
  const [errors, setErrors] = useState<FieldErrors>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const [conflict, setConflict] = useState<Conflict | null>(null);
  // the values the user started from: a conflict shows which fields someone else changed since
  const [base, setBase] = useState<GroupFormValues>(initial);
  const storages = useStorages();

  const set = <K extends keyof GroupFormValues>(k: K, val: GroupFormValues[K]) => setV((o) => ({ ...o, [k]: val }));

  const save = async (withEtag: string | null) => {
    const fe = validateGroupForm(v, isNew);
    setErrors(fe);
    setFormError(null);
    if (hasErrors(fe)) {
      setFormError('Fix the fields marked below.');
      return;
    }
    setBusy(true);
    try {
      const body = groupFormToInput(v, isNew);
      const g = isNew
        ? await api.post<Group>('/api/v1/instance-groups', body)
        : await api.put<Group>(`/api/v1/instance-groups/${encodeURIComponent(v.name)}`, body, withEtag);
      await qc.invalidateQueries({ queryKey: keys.groups });
      await qc.invalidateQueries({ queryKey: keys.summary });
      setConflict(null);
      navigate(`/groups/${encodeURIComponent(g?.name ?? v.name)}`, { state: { saved: true } });
    } catch (e) {
      if (e instanceof ApiError && e.status === 412 && !isNew) {
        try {
          const cur = await fetchGroup(v.name);
          setConflict({ current: cur.data, etag: cur.etag, detail: e.detail });
        } catch (e2) {
          setFormError(`${e.detail}; reloading the current values failed too: ${e2 instanceof Error ? e2.message : e2}`);
        }
      } else {
        const s = serverErrors(e, GROUP_FIELDS);
        setErrors(s.fields);
        setFormError(s.form ?? (e instanceof ApiError ? `The server refused: ${e.detail}` : null));
      }
    } finally {
      setBusy(false);
    }
  };

  const submit = (e: FormEvent) => {
    e.preventDefault();
    void save(etag);
  };

  const reapply = () => {
    if (!conflict) return;
    setEtag(conflict.etag);
    setBase(groupToForm(conflict.current));
    void save(conflict.etag);
  };

  const discard = () => {
    if (!conflict) return;
    setV(groupToForm(conflict.current));
    setBase(groupToForm(conflict.current));
    setEtag(conflict.etag);
    setConflict(null);
    setErrors({});
    setFormError(null);
    qc.setQueryData(keys.group(conflict.current.name), { data: conflict.current, etag: conflict.etag });
  };

  const toggleCandidate = (s: string, on: boolean) =>
    set('storageCandidates', on ? [...v.storageCandidates.filter((x) => x !== s), s] : v.storageCandidates.filter((x) => x !== s));

  const toggleReport = (s: string, on: boolean) =>
    set('eventReportStorageCandidates', on ? [...v.eventReportStorageCandidates.filter((x) => x !== s), s]
      : v.eventReportStorageCandidates.filter((x) => x !== s));

  const quotaPreview = parseBytes(v.quotaBytes);
  const known = storages.data?.items ?? [];
  const knownNames = known.map((s) => s.name);
  // data storages hold bytes (placement candidates); event-report storages only receive engines' reports
  const storageNames = known.filter((s) => !isEventReportType(s.type)).map((s) => s.name);
  const reportNames = known.filter((s) => isEventReportType(s.type)).map((s) => s.name);
  // candidates the group lists but the storage list lacks (not added yet) still show, marked missing, so they can be
  // kept or unticked
  const allCandidates = [...storageNames, ...v.storageCandidates.filter((c) => !knownNames.includes(c))];
  const allReports = [...reportNames, ...v.eventReportStorageCandidates.filter((c) => !knownNames.includes(c))];

  return (
    <>
      <PageSection>
        <Breadcrumb>
          <BreadcrumbItem><Link to="/groups">Instance groups</Link></BreadcrumbItem>
          {!isNew ? <BreadcrumbItem><Link to={`/groups/${encodeURIComponent(v.name)}`}>{v.name}</Link></BreadcrumbItem> : null}
          <BreadcrumbItem isActive>{isNew ? 'Create' : 'Edit'}</BreadcrumbItem>
        </Breadcrumb>
      </PageSection>
      <PageHeader title={isNew ? 'Create instance group' : `Edit instance group ${v.name}`} />
      <PageSection>
        {conflict ? (
          <ConflictView what={`group ${v.name}`} detail={conflict.detail} rows={groupConflictRows(conflict.current, v, base)}
            onReapply={reapply} onDiscard={discard} busy={busy} />
        ) : null}
        <Form onSubmit={submit} noValidate data-testid="group-form" {...ouia('group-form')} style={{ maxWidth: 900 }}>
          {formError ? <Alert variant="danger" isInline title={formError} data-testid="form-error" /> : null}
          <TextField prefix={P} name="name" label="Name" value={v.name} onChange={(x) => set('name', x)} error={errors.name}
            isRequired isDisabled={!isNew} helper="Letters, digits, '.', '_' and '-'; groups cannot be renamed" />
          <TextField prefix={P} name="quotaBytes" label="Quota (bytes)" value={v.quotaBytes} isRequired
            onChange={(x) => set('quotaBytes', x)} error={errors.quotaBytes}
            helper={quotaPreview ? `= ${formatBytes(quotaPreview)}; 30GB or 28GiB also work` : 'Bytes; 30GB or 28GiB also work'} />
          <FormFieldGroupExpandable isExpanded={Object.keys(v.typeQuotas).some((t) => v.typeQuotas[t])}
            toggleAriaLabel="Per-storage-type quotas"
            header={<FormFieldGroupHeader titleText={{ text: 'Per-storage-type quotas', id: 'group-type-quotas' }}
              titleDescription="Optional: a quota for each storage type, at most the total" />}>
            {STORAGE_TYPES.map((t) => (
              <TextField key={t} prefix={P} name={`storageTypeQuotas.${t}`} label={`Quota for ${t} (bytes)`}
                value={v.typeQuotas[t] ?? ''} onChange={(x) => set('typeQuotas', { ...v.typeQuotas, [t]: x })}
                error={errors[`storageTypeQuotas.${t}`]} />
            ))}
          </FormFieldGroupExpandable>
          <FormSection title="Water levels and eviction">
            <Grid hasGutter md={6}>
              <GridItem>
                <TextField prefix={P} name="waterLevels.softPercent" label="Soft water level (%)" value={v.softPercent}
                  onChange={(x) => set('softPercent', x)} error={errors['waterLevels.softPercent']} inputMode="numeric"
                  helper="Eviction starts here" />
              </GridItem>
              <GridItem>
                <TextField prefix={P} name="waterLevels.hardPercent" label="Hard water level (%)" value={v.hardPercent}
                  onChange={(x) => set('hardPercent', x)} error={errors['waterLevels.hardPercent']} inputMode="numeric"
                  helper="Writes are refused here" />
              </GridItem>
              <GridItem>
                <SelectField prefix={P} name="eviction.policy" label="Eviction policy" value={v.policy}
                  onChange={(x) => set('policy', x)} error={errors['eviction.policy']}
                  options={POLICIES.map((p) => ({ value: p, label: p }))} />
              </GridItem>
              <GridItem>
                <TextField prefix={P} name="eviction.triggerPeriodSeconds" label="Trigger period (s)" inputMode="numeric"
                  value={v.triggerPeriodSeconds} onChange={(x) => set('triggerPeriodSeconds', x)}
                  error={errors['eviction.triggerPeriodSeconds']} />
              </GridItem>
              <GridItem>
                <TextField prefix={P} name="eviction.stepSize" label="Step size" value={v.stepSize} inputMode="numeric"
                  onChange={(x) => set('stepSize', x)} error={errors['eviction.stepSize']} helper="Keys evicted per step" />
              </GridItem>
              <GridItem>
                <TextField prefix={P} name="eviction.stepPercentage" label="Step percentage (%)" inputMode="numeric"
                  value={v.stepPercentage} onChange={(x) => set('stepPercentage', x)} error={errors['eviction.stepPercentage']} />
              </GridItem>
              <GridItem>
                <TextField prefix={P} name="eviction.ttlSeconds" label="TTL (s)" value={v.ttlSeconds} inputMode="numeric"
                  onChange={(x) => set('ttlSeconds', x)} error={errors['eviction.ttlSeconds']} helper="0 = none; > 0 with TTL" />
              </GridItem>
              <GridItem>
                <TextField prefix={P} name="eviction.readerLeaseMs" label="Reader lease (ms)" inputMode="numeric"
                  value={v.readerLeaseMs} onChange={(x) => set('readerLeaseMs', x)} error={errors['eviction.readerLeaseMs']} />
              </GridItem>
            </Grid>
          </FormSection>
          <FormGroup role="group" label="Storage candidates" fieldId="group-storageCandidates" isRequired
            data-testid="group-storageCandidates">
            {storages.isPending ? <Loading what="Loading storages" />
              : storages.isError ? <ErrorState error={storages.error} what="storages" retry={() => storages.refetch()} />
                : allCandidates.length === 0 ? <Alert variant="info" isInline isPlain title="No storage yet: add one on the Storages page first." />
                  : allCandidates.map((s) => (
                    <Checkbox key={s} id={`group-candidate-${s}`} isChecked={v.storageCandidates.includes(s)}
                      label={storageNames.includes(s) ? s : <>{s} <Label isCompact color="orange"
                        data-testid={`candidate-missing-${s}`}>missing</Label></>}
                      onChange={(_e, on) => toggleCandidate(s, on)} data-testid={`group-candidate-${s}`} />
                  ))}
            {v.storageCandidates.length > 1 ? (
              <div>Preference order: {v.storageCandidates.map((c, i) => <Label key={c} isCompact>{i + 1}. {c}</Label>)}</div>
            ) : null}
            <Helper error={errors.storageCandidates} helper="In the order ticked (first = preferred)" />
          </FormGroup>
          <FormGroup role="group" label="Event-report storages" fieldId="group-eventReportStorageCandidates"
            data-testid="group-eventReportStorageCandidates">
            {storages.isPending || storages.isError ? null
              : allReports.length === 0 ? <Alert variant="info" isInline isPlain data-testid="group-no-report-storages"
                title="No event-report storage yet: add one (event_report_l1p5 or event_report_l2) on the Storages page." />
                : allReports.map((s) => (
                  <Checkbox key={s} id={`group-report-${s}`} isChecked={v.eventReportStorageCandidates.includes(s)}
                    label={reportNames.includes(s) ? s : <>{s} <Label isCompact color="orange"
                      data-testid={`report-missing-${s}`}>missing</Label></>}
                    onChange={(_e, on) => toggleReport(s, on)} data-testid={`group-report-${s}`} />
                ))}
            <Helper error={errors.eventReportStorageCandidates}
              helper="Where this group's engines report their own caches (KVCM ReportEvent); no bytes are stored there" />
          </FormGroup>
          <TextField prefix={P} name="maxInstanceCount" label="Max instance count" value={v.maxInstanceCount}
            inputMode="numeric" onChange={(x) => set('maxInstanceCount', x)} error={errors.maxInstanceCount} helper="0 = unlimited" />
          <FormGroup label="Anonymous access" fieldId="group-allowAnonymousMeta">
            <Switch id="group-allowAnonymousMeta" label="KVCM connectors without a token may use this group"
              isChecked={v.allowAnonymousMeta} onChange={(_e, on) => set('allowAnonymousMeta', on)}
              data-testid="group-allowAnonymousMeta" ouiaId="group-allowAnonymousMeta" aria-label="Anonymous access" />
            <Helper error={errors.allowAnonymousMeta} />
          </FormGroup>
          <ActionGroup>
            <Button type="submit" variant="primary" isLoading={busy} isDisabled={busy} data-testid="group-save"
              ouiaId="group-save">{isNew ? 'Create' : 'Save'}</Button>
            <Button variant="link" onClick={() => navigate(isNew ? '/groups' : `/groups/${encodeURIComponent(v.name)}`)}
              data-testid="group-cancel" ouiaId="group-cancel">Cancel</Button>
          </ActionGroup>
        </Form>
      </PageSection>
    </>
  );
}
