import { Label } from '@patternfly/react-core';

/**
 * A group's storage candidates in preference order. A candidate that names no storage yet (KVCM stores groups as
 * given; the REST view's `missingStorages`, recomputed on every read) carries a "missing" label: the metadata plane
 * places nothing on it until the storage is added.
 */
export function Candidates({ names, missing, testId = 'group-candidates' }:
  { names: string[]; missing?: string[]; testId?: string }) {
  return (
    <span data-testid={testId}>
      {names.map((n, i) => {
        const gone = missing?.includes(n) ?? false;
        return (
          <span key={n} data-testid={`candidate-${n}`} data-missing={gone ? 'true' : 'false'}>
            {i > 0 ? ', ' : ''}{n}
            {gone ? <>{' '}<Label isCompact color="orange" data-testid={`candidate-missing-${n}`}>missing</Label></> : null}
          </span>
        );
      })}
    </span>
  );
}
