import { Link } from 'react-router-dom';
import { Alert, PageSection } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { useQueries } from '@tanstack/react-query';
import { errorMessage } from '../api/client';
import { LIVE_MS, fetchMetaInstance, keys, useInstances, useStatsSummary } from '../api/hooks';
import { Empty, ErrorState, Loading, PageHeader } from '../components/States';
import { formatBytes, formatCount, formatRate } from '../lib/format';

/** Instances (of one group, or all the caller may see) with key count and bytes (metadata plane) and hit rate. */
export function InstancesTable({ group }: { group?: string }) {
  const q = useInstances({ group });
  const summary = useStatsSummary();
  const items = q.data?.items ?? [];
  const metas = useQueries({
    queries: items.map((i) => ({
      queryKey: keys.metaInstance(i.instanceId),
      queryFn: ({ signal }: { signal: AbortSignal }) => fetchMetaInstance(i.instanceId, signal),
      refetchInterval: LIVE_MS,
      retry: false,
    })),
  });
  if (q.isPending) return <Loading what="Loading instances" />;
  if (q.isError) return <ErrorState error={q.error} what="instances" retry={() => q.refetch()} />;
  if (items.length === 0) {
    return (
      <Empty title="No instances" testId="instances-empty">
        Instances register through the KVCM API (RegisterInstance) or POST /api/v1/instances.
      </Empty>
    );
  }
  const stats = new Map((summary.data?.instances ?? []).map((s) => [s.instance, s]));
  const metaError = metas.find((m) => m.isError)?.error;
  return (
    <>
      {metaError ? (
        <Alert variant="warning" isInline isPlain title={`Key counts unavailable: ${errorMessage(metaError)}`}
          data-testid="meta-unavailable" style={{ marginBottom: 8 }} />
      ) : null}
      <Table aria-label="Instances" ouiaId="instances-table" data-testid="instances-table" variant="compact">
        <Thead>
          <Tr>
            <Th>Instance</Th>
            {group ? null : <Th>Group</Th>}
            <Th>Model</Th>
            <Th>Block size</Th>
            <Th>Keys</Th>
            <Th>Bytes</Th>
            <Th>Hit rate (hour)</Th>
            <Th>Queries (hour)</Th>
          </Tr>
        </Thead>
        <Tbody>
          {items.map((i, n) => {
            const m = metas[n]?.data;
            const s = stats.get(i.instanceId);
            const model = (i.modelDeployment as { model_name?: string } | undefined)?.model_name;
            return (
              <Tr key={i.instanceId} data-testid={`instance-row-${i.instanceId}`} ouiaId={`instance-row-${i.instanceId}`}>
                <Td dataLabel="Instance"><Link to={`/instances/${encodeURIComponent(i.instanceId)}`}>{i.instanceId}</Link></Td>
                {group ? null : <Td dataLabel="Group"><Link to={`/groups/${encodeURIComponent(i.group)}`}>{i.group}</Link></Td>}
                <Td dataLabel="Model">{model ?? '–'}</Td>
                <Td dataLabel="Block size">{i.blockSize} tokens</Td>
                <Td dataLabel="Keys" data-testid="instance-keys">{m ? formatCount(m.keys) : '–'}</Td>
                <Td dataLabel="Bytes" data-testid="instance-bytes">{m ? formatBytes(m.keys * m.bytes_per_block) : '–'}</Td>
                <Td dataLabel="Hit rate (hour)" data-testid="instance-hit-rate">{formatRate(s?.hitRateLastHour)}</Td>
                <Td dataLabel="Queries (hour)">{formatCount(s?.queriesLastHour ?? 0)}</Td>
              </Tr>
            );
          })}
        </Tbody>
      </Table>
    </>
  );
}

export default function Instances() {
  return (
    <>
      <PageHeader title="Instances" />
      <PageSection>
        <InstancesTable />
      </PageSection>
    </>
  );
}
