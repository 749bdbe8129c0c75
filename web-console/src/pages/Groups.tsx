import { useState } from 'react';
import { Link, useNavigate } from 'react-router-dom';
import { Button, PageSection, Toolbar, ToolbarContent, ToolbarItem } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { useQueryClient } from '@tanstack/react-query';
import { api } from '../api/client';
import { keys, useGroups, useStatsSummary } from '../api/hooks';
import type { Group } from '../api/types';
import { useSession } from '../auth/AuthContext';
import { permissions } from '../auth/roles';
import { Candidates } from '../components/Candidates';
import { ConfirmModal } from '../components/ConfirmModal';
import { Empty, ErrorState, Loading, PageHeader } from '../components/States';
import { LevelLabel } from '../components/Status';
import { formatBytes, formatRate } from '../lib/format';

export default function Groups() {
  const session = useSession();
  const canWrite = permissions(session.role).writeGroups;
  const q = useGroups();
  const summary = useStatsSummary();
  const navigate = useNavigate();
  const qc = useQueryClient();
  const [deleting, setDeleting] = useState<Group | null>(null);
  const hit = new Map((summary.data?.groups ?? []).map((g) => [g.group, g]));

  return (
    <>
      <PageHeader title="Instance groups" />
      <PageSection>
        {canWrite ? (
          <Toolbar>
            <ToolbarContent>
              <ToolbarItem>
                <Button variant="primary" onClick={() => navigate('/groups/new')} data-testid="group-create"
                  ouiaId="group-create">Create group</Button>
              </ToolbarItem>
            </ToolbarContent>
          </Toolbar>
        ) : null}
        {q.isPending ? <Loading what="Loading groups" />
          : q.isError ? <ErrorState error={q.error} what="instance groups" retry={() => q.refetch()} />
            : q.data.items.length === 0 ? (
              <Empty title="No instance groups" testId="groups-empty">
                {canWrite ? 'Create one to give instances a quota.' : 'This account has no group.'}
              </Empty>
            ) : (
              <Table aria-label="Instance groups" ouiaId="groups-table" data-testid="groups-table" variant="compact">
                <Thead>
                  <Tr>
                    <Th>Name</Th>
                    <Th>Quota</Th>
                    <Th>Used</Th>
                    <Th>Level</Th>
                    <Th>Policy</Th>
                    <Th>Water levels</Th>
                    <Th>Storage candidates</Th>
                    <Th>Hit rate (hour)</Th>
                    {canWrite ? <Th screenReaderText="Actions" /> : null}
                  </Tr>
                </Thead>
                <Tbody>
                  {q.data.items.map((g) => {
                    const used = g.usage?.usedBytes ?? hit.get(g.name)?.usedBytes ?? 0;
                    const pct = g.usage?.usedPercent ?? (g.quotaBytes > 0 ? (100 * used) / g.quotaBytes : 0);
                    return (
                      <Tr key={g.name} data-testid={`group-row-${g.name}`} ouiaId={`group-row-${g.name}`}>
                        <Td dataLabel="Name"><Link to={`/groups/${encodeURIComponent(g.name)}`}>{g.name}</Link></Td>
                        <Td dataLabel="Quota">{formatBytes(g.quotaBytes)}</Td>
                        <Td dataLabel="Used" data-testid="group-used">{formatBytes(used)} ({pct.toFixed(1)} %)</Td>
                        <Td dataLabel="Level"><LevelLabel percent={pct} soft={g.waterLevels.softPercent} hard={g.waterLevels.hardPercent} /></Td>
                        <Td dataLabel="Policy">{g.eviction.policy}</Td>
                        <Td dataLabel="Water levels">{g.waterLevels.softPercent} / {g.waterLevels.hardPercent} %</Td>
                        <Td dataLabel="Storage candidates"><Candidates names={g.storageCandidates} missing={g.missingStorages} /></Td>
                        <Td dataLabel="Hit rate (hour)" data-testid="group-hit-rate">{formatRate(hit.get(g.name)?.hitRate?.lastHour)}</Td>
                        {canWrite ? (
                          <Td isActionCell style={{ whiteSpace: 'nowrap' }}>
                            <Button variant="secondary" size="sm" data-testid={`group-edit-${g.name}`} ouiaId={`group-edit-${g.name}`}
                              onClick={() => navigate(`/groups/${encodeURIComponent(g.name)}/edit`)}>Edit</Button>{' '}
                            <Button variant="danger" size="sm" data-testid={`group-delete-${g.name}`} ouiaId={`group-delete-${g.name}`}
                              onClick={() => setDeleting(g)}>Delete</Button>
                          </Td>
                        ) : null}
                      </Tr>
                    );
                  })}
                </Tbody>
              </Table>
            )}
      </PageSection>
      {deleting ? (
        <ConfirmModal title={`Delete group ${deleting.name}?`} confirmLabel="Delete" danger testId="group-delete-modal"
          onClose={() => setDeleting(null)}
          onConfirm={async () => {
            await api.del(`/api/v1/instance-groups/${encodeURIComponent(deleting.name)}`,
              deleting.version !== undefined ? `"${deleting.version}"` : undefined);
            await qc.invalidateQueries({ queryKey: keys.groups });
            await qc.invalidateQueries({ queryKey: keys.summary });
          }}>
          The group's quota and settings are removed. The server refuses while the group has instances.
        </ConfirmModal>
      ) : null}
    </>
  );
}
