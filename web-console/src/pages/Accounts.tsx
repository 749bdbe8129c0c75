import { useState, type FormEvent } from 'react';
import {
  Alert, Button, Form, Label, LabelGroup, Modal, ModalBody, ModalFooter, ModalHeader, ModalVariant, PageSection,
  Toolbar, ToolbarContent, ToolbarItem,
} from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { useQueryClient } from '@tanstack/react-query';
import { ApiError, api } from '../api/client';
import { fetchAccount, keys, useAccounts, useGroups } from '../api/hooks';
import { ROLES, type Account, type AccountInput } from '../api/types';
import { useSession } from '../auth/AuthContext';
import { ConfirmModal } from '../components/ConfirmModal';
import { SelectField, TextField } from '../components/FormFields';
import { Empty, ErrorState, Loading, PageHeader } from '../components/States';
import { ouia } from '../lib/format';
import { hasErrors, nameProblem, passwordProblem, serverErrors, type FieldErrors } from '../lib/validation';

type Mode = 'create' | 'edit' | 'password';

export function parseGroupList(raw: string): string[] {
  return [...new Set(raw.split(/[\s,]+/).map((s) => s.trim()).filter(Boolean))];
}

export function validateAccount(mode: Mode, v: { name: string; password: string; role: string; groups: string }): FieldErrors {
  const e: FieldErrors = {};
  if (mode === 'create') {
    const p = nameProblem(v.name, 'account');
    if (p) e.name = `Name ${p}`;
  }
  if (mode !== 'edit') {
    const p = passwordProblem(v.password, v.name);
    if (p) e.password = p;
  }
  if (mode !== 'password') {
    if (!ROLES.includes(v.role as (typeof ROLES)[number])) e.role = 'Choose a role';
    const bad = parseGroupList(v.groups).map((g) => [g, nameProblem(g, 'group')] as const).find(([, p]) => p);
    if (bad) e.groups = `Group '${bad[0]}' ${bad[1]}`;
  }
  return e;
}

function AccountModal({ mode, account, onClose }: { mode: Mode; account?: { data: Account; etag: string | null }; onClose: () => void }) {
  const qc = useQueryClient();
  const groups = useGroups();
  const [v, setV] = useState({
    name: account?.data.name ?? '', password: '', role: account?.data.role ?? 'tenant',
    groups: (account?.data.groups ?? []).join(', '),
  });
  const [errors, setErrors] = useState<FieldErrors>({});
  const [formError, setFormError] = useState<string | null>(null);
  const [busy, setBusy] = useState(false);
  const set = (k: keyof typeof v, x: string) => setV((o) => ({ ...o, [k]: x }));

  const submit = async (ev?: FormEvent) => {
    ev?.preventDefault();
    const fe = validateAccount(mode, v);
    setErrors(fe);
    setFormError(null);
    if (hasErrors(fe)) return;
    const body: AccountInput = mode === 'create' ? { name: v.name, password: v.password, role: v.role, groups: parseGroupList(v.groups) }
      : mode === 'edit' ? { role: v.role, groups: parseGroupList(v.groups) } : { password: v.password };
    setBusy(true);
    try {
      if (mode === 'create') {
        await api.post('/api/v1/accounts', body);
      } else {
        await api.put(`/api/v1/accounts/${encodeURIComponent(v.name)}`, body, account?.etag);
      }
      await qc.invalidateQueries({ queryKey: keys.accounts });
      onClose();
    } catch (err) {
      if (err instanceof ApiError && err.status === 412) {
        setFormError(`${err.detail}. Someone changed this account meanwhile: close and open it again.`);
      } else {
        const s = serverErrors(err, ['name', 'password', 'role', 'groups']);
        setErrors(s.fields);
        setFormError(s.form ?? null);
      }
    } finally {
      setBusy(false);
    }
  };

  const title = mode === 'create' ? 'Create account' : mode === 'edit' ? `Change role and groups of ${v.name}` : `Reset password of ${v.name}`;
  const known = groups.data?.items.map((g) => g.name) ?? [];
  return (
    <Modal variant={ModalVariant.medium} isOpen onClose={onClose} aria-labelledby="account-form-title"
      data-testid="account-modal" ouiaId="account-modal">
      <ModalHeader title={title} labelId="account-form-title" />
      <ModalBody>
        <Form id="account-form" onSubmit={submit} noValidate data-testid="account-form" {...ouia('account-form')}>
          {formError ? <Alert variant="danger" isInline title={formError} data-testid="form-error" /> : null}
          <TextField prefix="account" name="name" label="Name" value={v.name} onChange={(x) => set('name', x)}
            error={errors.name} isRequired isDisabled={mode !== 'create'} autoComplete="off" />
          {mode !== 'edit' ? (
            <TextField prefix="account" name="password" label="Password" type="password" value={v.password}
              onChange={(x) => set('password', x)} error={errors.password} isRequired autoComplete="new-password"
              helper="12+ characters mixing 3 of: lower case, upper case, digits, other characters" />
          ) : null}
          {mode !== 'password' ? (
            <>
              <SelectField prefix="account" name="role" label="Role" value={v.role} onChange={(x) => set('role', x)}
                error={errors.role} options={ROLES.map((r) => ({ value: r, label: r }))}
                helper="admin: everything; operator: all but accounts; tenant: read-only, its groups" />
              <TextField prefix="account" name="groups" label="Groups" value={v.groups} onChange={(x) => set('groups', x)}
                error={errors.groups} helper={known.length ? `Comma separated; existing: ${known.join(', ')}` : 'Comma separated group names'} />
            </>
          ) : null}
        </Form>
      </ModalBody>
      <ModalFooter>
        <Button variant="primary" type="submit" form="account-form" isLoading={busy} isDisabled={busy}
          data-testid="account-save" ouiaId="account-save">{mode === 'create' ? 'Create' : 'Save'}</Button>
        <Button variant="link" onClick={onClose} data-testid="account-cancel" ouiaId="account-cancel">Cancel</Button>
      </ModalFooter>
    </Modal>
  );
}

export default function Accounts() {
  const session = useSession();
  const q = useAccounts();
  const qc = useQueryClient();
  const [modal, setModal] = useState<{ mode: Mode; account?: { data: Account; etag: string | null } } | null>(null);
  const [deleting, setDeleting] = useState<Account | null>(null);
  const [error, setError] = useState<string | null>(null);

  const open = async (mode: Mode, a: Account) => {
    setError(null);
    try {
      setModal({ mode, account: await fetchAccount(a.name) });
    } catch (e) {
      setError(e instanceof Error ? e.message : String(e));
    }
  };

  return (
    <>
      <PageHeader title="Accounts" />
      <PageSection>
        <Toolbar>
          <ToolbarContent>
            <ToolbarItem>
              <Button variant="primary" onClick={() => setModal({ mode: 'create' })} data-testid="account-create"
                ouiaId="account-create">Create account</Button>
            </ToolbarItem>
          </ToolbarContent>
        </Toolbar>
        {error ? <Alert variant="danger" isInline title={error} /> : null}
        {q.isPending ? <Loading what="Loading accounts" />
          : q.isError ? <ErrorState error={q.error} what="accounts" retry={() => q.refetch()} />
            : q.data.items.length === 0 ? <Empty title="No accounts" />
              : (
                <Table aria-label="Accounts" ouiaId="accounts-table" data-testid="accounts-table" variant="compact">
                  <Thead>
                    <Tr>
                      <Th>Name</Th>
                      <Th>Role</Th>
                      <Th>Groups</Th>
                      <Th screenReaderText="Actions" />
                    </Tr>
                  </Thead>
                  <Tbody>
                    {q.data.items.map((a) => (
                      <Tr key={a.name} data-testid={`account-row-${a.name}`} ouiaId={`account-row-${a.name}`}>
                        <Td dataLabel="Name">{a.name}{a.name === session.user ? <> <Label isCompact>you</Label></> : null}</Td>
                        <Td dataLabel="Role" data-testid="account-row-role">{a.role}</Td>
                        <Td dataLabel="Groups" data-testid="account-row-groups">
                          {a.groups.length ? <LabelGroup>{a.groups.map((g) => <Label key={g} variant="outline">{g}</Label>)}</LabelGroup> : '–'}
                        </Td>
                        <Td isActionCell style={{ whiteSpace: 'nowrap' }}>
                          <Button variant="secondary" size="sm" onClick={() => void open('edit', a)}
                            data-testid={`account-edit-${a.name}`} ouiaId={`account-edit-${a.name}`}>Role and groups</Button>{' '}
                          <Button variant="secondary" size="sm" onClick={() => void open('password', a)}
                            data-testid={`account-password-${a.name}`} ouiaId={`account-password-${a.name}`}>Reset password</Button>{' '}
                          <Button variant="danger" size="sm" onClick={() => setDeleting(a)}
                            data-testid={`account-delete-${a.name}`} ouiaId={`account-delete-${a.name}`}>Delete</Button>
                        </Td>
                      </Tr>
                    ))}
                  </Tbody>
                </Table>
              )}
      </PageSection>
      {modal ? <AccountModal mode={modal.mode} account={modal.account} onClose={() => setModal(null)} /> : null}
      {deleting ? (
        <ConfirmModal title={`Delete account ${deleting.name}?`} confirmLabel="Delete" danger testId="account-delete-modal"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api.del(`/api/v1/accounts/${encodeURIComponent(deleting.name)}`,
              deleting.version !== undefined ? `"${deleting.version}"` : undefined);
            await qc.invalidateQueries({ queryKey: keys.accounts });
          }}>
          Its tokens stop working when they expire. The last admin cannot be deleted.
        </ConfirmModal>
      ) : null}
    </>
  );
}
