import { ToggleGroup, ToggleGroupItem } from '@patternfly/react-core';
import { useSearchParams } from 'react-router-dom';
import { RANGES, type Range } from '../api/hooks';

/** The time range of a page's charts, kept in the URL (?range=24h) so a reload or a shared link keeps it. */
export function useRange(def: Range = '1h'): [Range, (r: Range) => void] {
  const [params, setParams] = useSearchParams();
  const raw = params.get('range');
  const range = (RANGES.some((r) => r.value === raw) ? raw : def) as Range;
  const set = (r: Range) => {
    const p = new URLSearchParams(params);
    p.set('range', r);
    setParams(p, { replace: true });
  };
  return [range, set];
}

export function RangeSelect({ value, onChange }: { value: Range; onChange: (r: Range) => void }) {
  return (
    <ToggleGroup aria-label="Time range" data-testid="range-select">
      {RANGES.map((r) => (
        <ToggleGroupItem key={r.value} text={r.value} aria-label={r.label} buttonId={`range-${r.value}`}
          isSelected={value === r.value} onChange={() => onChange(r.value)} />
      ))}
    </ToggleGroup>
  );
}
