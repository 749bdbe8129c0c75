import { useEffect, type ReactNode } from 'react';
import {
  Alert, AlertActionLink, Bullseye, EmptyState, EmptyStateBody, PageSection, Spinner, Title,
} from '@patternfly/react-core';
import { ApiError, errorMessage } from '../api/client';

export function Loading({ what = 'Loading' }: { what?: string }) {
  return (
    <Bullseye data-testid="loading">
      <Spinner size="lg" aria-label={what} />
    </Bullseye>
  );
}

/** A failed fetch: says what failed and why, with a retry — never an endless spinner. */
export function ErrorState({ error, what, retry }: { error: unknown; what: string; retry?: () => void }) {
  const status = error instanceof ApiError ? error.status : undefined;
  const title = status === 403 ? `Not allowed to see ${what}`
    : status === 404 ? `${what} not found`
      : status === 503 || status === 0 ? `${what}: service unavailable`
        : `Could not load ${what}`;
  return (
    <Alert
      variant={status === 403 ? 'warning' : 'danger'}
      isInline
      title={title}
      data-testid="error-state"
      actionLinks={retry ? <AlertActionLink onClick={retry}>Retry</AlertActionLink> : undefined}
    >
      {errorMessage(error)}
    </Alert>
  );
}

export function Empty({ title, children, testId }: { title: string; children?: ReactNode; testId?: string }) {
  return (
    <EmptyState titleText={title} headingLevel="h3" data-testid={testId ?? 'empty-state'}>
      {children ? <EmptyStateBody>{children}</EmptyStateBody> : null}
    </EmptyState>
  );
}

export function PageHeader({ title, children, testId }: { title: ReactNode; children?: ReactNode; testId?: string }) {
  useEffect(() => {
    if (typeof title === 'string') document.title = `${title} · KVPool`;
  }, [title]);
  return (
    <PageSection>
      <Title headingLevel="h1" size="2xl" data-testid={testId ?? 'page-title'}>{title}</Title>
      {children}
    </PageSection>
  );
}

export function Forbidden({ what }: { what: string }) {
  return (
    <PageSection>
      <Alert variant="warning" isInline title="Not allowed" data-testid="forbidden">
        This account's role may not see {what}.
      </Alert>
    </PageSection>
  );
}
