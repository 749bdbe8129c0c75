import type { ReactElement } from 'react';
import { render } from '@testing-library/react';
import { MemoryRouter } from 'react-router-dom';
import { QueryClient, QueryClientProvider } from '@tanstack/react-query';
import { saveSession, type Role } from '../auth/session';

export function signInAs(role: Role, groups: string[] = [], user = `${role}-user`) {
  saveSession({ user, token: `token-${role}`, role, groups });
}

export interface FetchCall {
  url: string;
  method: string;
  headers: Record<string, string>;
  body?: string;
}

/** A fetch stub answering by "METHOD path" (path without the query), recording every call. */
export function stubFetch(routes: Record<string, (call: FetchCall) => Response | Promise<Response>>) {
  const calls: FetchCall[] = [];
  const fn = async (input: RequestInfo | URL, init?: RequestInit) => {
    const url = String(input);
    const method = init?.method ?? 'GET';
    const call: FetchCall = { url, method, headers: (init?.headers ?? {}) as Record<string, string>,
      body: typeof init?.body === 'string' ? init.body : undefined };
    calls.push(call);
    const path = url.split('?')[0];
    const h = routes[`${method} ${path}`] ?? routes[`${method} *`];
    if (!h) {
      return json({ status: 404, title: 'Not found', detail: `no stub for ${method} ${path}` }, 404);
    }
    return h(call);
  };
  globalThis.fetch = fn as typeof fetch;
  return calls;
}

export function json(body: unknown, status = 200, headers: Record<string, string> = {}): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': status >= 400 ? 'application/problem+json' : 'application/json', ...headers },
  });
}

export function renderWithProviders(ui: ReactElement, { route = '/' }: { route?: string } = {}) {
  const qc = new QueryClient({ defaultOptions: { queries: { retry: false }, mutations: { retry: false } } });
  return {
    qc,
    ...render(
      <QueryClientProvider client={qc}>
        <MemoryRouter initialEntries={[route]}>{ui}</MemoryRouter>
      </QueryClientProvider>,
    ),
  };
}
