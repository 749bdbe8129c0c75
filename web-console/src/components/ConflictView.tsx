import { Alert, Button, Flex, FlexItem, Label } from '@patternfly/react-core';
import { Table, Tbody, Td, Th, Thead, Tr } from '@patternfly/react-table';

export interface ConflictRow {
  field: string;
  label: string;
  current: string;
  mine: string;
  /** The value when the user loaded the form; current differing from it = changed by someone else. */
  original?: string;
}

/** Whether someone else changed this field since the user loaded it (unknown original: assume so). */
export function changedByOthers(r: ConflictRow): boolean {
  return r.original === undefined || r.original !== r.current;
}

/** Rows whose current value differs from the user's come first and are marked. */
export function sortConflictRows(rows: ConflictRow[]): ConflictRow[] {
  return [...rows.filter((r) => r.current !== r.mine), ...rows.filter((r) => r.current === r.mine)];
}

/**
 * A stale edit (412): someone changed the resource since it was loaded. Shows the current values beside the
 * user's and lets them re-apply their values over the current version or discard them — never silently.
 */
export function ConflictView({ what, detail, rows, onReapply, onDiscard, busy }: {
  what: string;
  detail?: string;
  rows: ConflictRow[];
  onReapply: () => void;
  onDiscard: () => void;
  busy?: boolean;
}) {
  const sorted = sortConflictRows(rows);
  const changed = rows.filter((r) => r.current !== r.mine).length;
  return (
    <Alert variant="warning" isInline title={`Conflict: ${what} was changed by someone else`} data-testid="conflict-alert"
      style={{ marginBottom: 16 }}
      ouiaId="conflict-alert">
      <p>
        Your changes were not saved. {detail ? <span data-testid="conflict-detail">{detail}</span> : null}
      </p>
      <p>
        {changed === 0 ? 'The current values equal yours.'
          : `${changed} field${changed === 1 ? '' : 's'} differ${changed === 1 ? 's' : ''} between the current version and your edit.`}
        {' '}Re-apply writes your values over the current version; discard keeps the current version.
      </p>
      <Table aria-label="Current values and your values" variant="compact" ouiaId="conflict-table" data-testid="conflict-table">
        <Thead>
          <Tr>
            <Th>Field</Th>
            <Th>Current value</Th>
            <Th>Your value</Th>
          </Tr>
        </Thead>
        <Tbody>
          {sorted.map((r) => {
            const differs = r.current !== r.mine;
            const theirs = changedByOthers(r);
            return (
              <Tr key={r.field} data-testid={`conflict-row-${r.field}`} data-differs={differs ? 'true' : 'false'}
                data-changed={theirs ? 'true' : 'false'}>
                <Td dataLabel="Field">{differs ? <strong>{r.label}</strong> : r.label}</Td>
                <Td dataLabel="Current value" data-testid={theirs ? 'conflict-current' : 'conflict-current-unchanged'}>
                  {r.current}{theirs && r.original !== undefined
                    ? <> <Label color="orange" isCompact>changed (was {r.original})</Label></> : null}
                </Td>
                <Td dataLabel="Your value" data-testid="conflict-mine">{differs ? <strong>{r.mine}</strong> : r.mine}</Td>
              </Tr>
            );
          })}
        </Tbody>
      </Table>
      <Flex style={{ marginTop: 'var(--pf-t--global--spacer--md)' }}>
        <FlexItem>
          <Button variant="primary" onClick={onReapply} isLoading={busy} isDisabled={busy} data-testid="conflict-reapply"
            ouiaId="conflict-reapply">Re-apply my changes</Button>
        </FlexItem>
        <FlexItem>
          <Button variant="secondary" onClick={onDiscard} isDisabled={busy} data-testid="conflict-discard"
            ouiaId="conflict-discard">Discard my changes</Button>
        </FlexItem>
      </Flex>
    </Alert>
  );
}
