import { Link } from 'react-router-dom';
import { Label, PageSection } from '@patternfly/react-core';
import ExclamationTriangleIcon from '@patternfly/react-icons/dist/esm/icons/exclamation-triangle-icon';
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
          <Th>Used by the router</Th>
          <Th>Uncertain</Th>
          <Th>In the pool</Th>
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
            <Td dataLabel="Used by the router" data-testid="engine-instance-visible">{formatCount(i.visible_pods)}</Td>
            <Td dataLabel="Uncertain" data-testid="engine-instance-uncertain">
              {i.uncertain_pods ? <Label color="orange" isCompact icon={<ExclamationTriangleIcon />}>{formatCount(i.uncertain_pods)}</Label>
                : formatCount(i.uncertain_pods)}
            </Td>
            <Td dataLabel="In the pool">
              {i.registered === false ? <Label variant="outline" isCompact data-testid="engine-instance-unregistered">not registered</Label>
                : <Link to={`/instances/${encodeURIComponent(i.instance_id)}`}>instance details</Link>}
            </Td>
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
