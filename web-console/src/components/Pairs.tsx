import type { ReactNode } from 'react';
import {
  DescriptionList, DescriptionListDescription, DescriptionListGroup, DescriptionListTerm, type DescriptionListProps,
} from '@patternfly/react-core';

/** A description list of (term, value) pairs: the detail cards of groups, instances and what-if runs. */
export function Pairs({ items, testId, ...list }: { items: [string, ReactNode][]; testId?: string }
  & Omit<DescriptionListProps, 'children'>) {
  return (
    <DescriptionList {...list} data-testid={testId}>
      {items.map(([t, d]) => (
        <DescriptionListGroup key={t}>
          <DescriptionListTerm>{t}</DescriptionListTerm>
          <DescriptionListDescription>{d}</DescriptionListDescription>
        </DescriptionListGroup>
      ))}
    </DescriptionList>
  );
}
