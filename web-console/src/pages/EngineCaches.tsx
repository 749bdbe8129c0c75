import { Link } from 'react-router-dom';
import { PageSection } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';
import { useEngineInstances } from '../api/engine';
import { Empty, ErrorState, Loading, PageHeader } from '../components/States';
import { formatCount } from '../lib/format';

/** The instances engines report cache events for (vLLM/SGLang KV events, KVCM ReportEvent), with their pod counts. */
export function EngineInstancesTable() {
  const q = useEngineInstances();
  if (q.isPending) return <Loading what="Loading engine caches" />;
  if (q.isError) return <ErrorState error={q.error} what="engine caches" retry={() => q.refetch()} />;
  if (q.data.length === 0) {
    return (
      <Empty title="No engine reports yet" testId="engine-instances-empty">
        No engine has reported its cache for any instance you may see. Engines report through KVCM's ReportEvent or
        vLLM/SGLang KV events (ZMQ or Kafka) configured on the metadata plane.
      </Empty>
    );
  }
  return (
    <Table aria-label="Engine caches" ouiaId="engine-instances-table" data-testid="engine-instances-table" variant="compact">
      <Thead>
        <Tr>
          <Th>Instance</Th>
          <Th>Group</Th>
          <Th>Engine pods</Th>
          <Th>Pool view</Th>
        </Tr>
      </Thead>
      <Tbody>
        {q.data.map((i) => (
          <Tr key={i.instance_id} data-testid={`engine-instance-row-${i.instance_id}`} ouiaId={`engine-instance-row-${i.instance_id}`}>
            <Td dataLabel="Instance">
              <Link to={`/engine/${encodeURIComponent(i.instance_id)}`} data-testid="engine-instance-link">{i.instance_id}</Link>
            </Td>
            <Td dataLabel="Group">{i.group ?? '–'}</Td>
            <Td dataLabel="Engine pods" data-testid="engine-instance-pods">{formatCount(i.pods)}</Td>
            <Td dataLabel="Pool view"><Link to={`/instances/${encodeURIComponent(i.instance_id)}`}>instance details</Link></Td>
          </Tr>
        ))}
      </Tbody>
    </Table>
  );
}

export default function EngineCaches() {
  return (
    <>
      <PageHeader title="Engine caches">
        <p style={{ marginTop: 8 }}>
          Where each instance's KV cache lives in the engines (GPU, host memory, other tiers per pod), next to the
          pool's own storage, and the hit rate a prefix-aware router would get.
        </p>
      </PageHeader>
      <PageSection>
        <EngineInstancesTable />
      </PageSection>
    </>
  );
}
