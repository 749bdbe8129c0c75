import { afterEach, describe, expect, it, vi } from 'vitest';
import { ApiError, NetworkError, api, parseProblem, qs, requestWithEtag, setUnauthorizedHandler } from './client';
import { loadSession } from '../auth/session';
import { json, signInAs, stubFetch } from '../testing/utils';

afterEach(() => setUnauthorizedHandler(() => {}));

async function failure(p: Promise<unknown>): Promise<ApiError> {
  try {
    await p;
  } catch (e) {
    return e as ApiError;
  }
  throw new Error('expected a failure');
}

describe('API client', () => {
  it('sends the bearer token of the session', async () => {
    signInAs('admin');
    const calls = stubFetch({ 'GET /api/v1/storages': () => json({ items: [] }) });
    await api.get('/api/v1/storages');
    expect(calls[0].headers.Authorization).toBe('Bearer token-admin');
  });

  it('on 401 clears the session and hands over to sign-in', async () => {
    signInAs('operator');
    const handler = vi.fn();
    setUnauthorizedHandler(handler);
    stubFetch({ 'GET *': () => json({ status: 401, title: 'Unauthorized', detail: 'token expired' }, 401) });
    const err = await failure(api.get('/api/v1/instance-groups'));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(401);
    expect(handler).toHaveBeenCalledTimes(1);
    expect(loadSession()).toBeNull();
  });

  it('a 401 on sign-in itself is a wrong password, not an expired session', async () => {
    const handler = vi.fn();
    setUnauthorizedHandler(handler);
    stubFetch({ 'POST /api/v1/tokens': () => json({ status: 401, detail: 'wrong user name or password' }, 401) });
    const { request } = await import('./client');
    const err: ApiError = await request<never>('/api/v1/tokens', { method: 'POST', body: {}, anonymous: true }).catch((e: ApiError) => e);
    expect(err.status).toBe(401);
    expect(err.detail).toBe('wrong user name or password');
    expect(handler).not.toHaveBeenCalled();
  });

  it('turns problem+json into an ApiError with detail and field', async () => {
    signInAs('admin');
    stubFetch({
      'POST /api/v1/instance-groups': () => json({ type: 'https://kvpool.dev/problems/invalid-request', title: 'Invalid request',
        status: 400, detail: 'quotaBytes must be between 1 and 1152921504606846976, got 0', field: 'quotaBytes' }, 400),
    });
    const err = await failure(api.post('/api/v1/instance-groups', {}));
    expect(err).toBeInstanceOf(ApiError);
    expect(err.status).toBe(400);
    expect(err.field).toBe('quotaBytes');
    expect(err.detail).toMatch(/quotaBytes must be/);
  });

  it('reads a plain-text or a non-problem JSON refusal too', async () => {
    const text = await parseProblem(new Response('gateway exploded', { status: 502, statusText: 'Bad Gateway' }));
    expect(text.detail).toBe('gateway exploded');
    expect(text.status).toBe(502);
    const other = await parseProblem(new Response(JSON.stringify({ message: 'nope' }), { status: 500 }));
    expect(other.detail).toBe('nope');
    const empty = await parseProblem(new Response('', { status: 503, statusText: 'Service Unavailable' }));
    expect(empty.detail).toBe('503 Service Unavailable');
  });

  it('a server that cannot be reached is a NetworkError (status 0), not a hang', async () => {
    globalThis.fetch = (async () => { throw new TypeError('Failed to fetch'); }) as typeof fetch;
    const err = await failure(api.get('/api/v1/services'));
    expect(err).toBeInstanceOf(NetworkError);
    expect(err.status).toBe(0);
    expect(err.detail).toMatch(/cannot reach/);
  });

  it('returns the ETag and sends If-Match', async () => {
    signInAs('admin');
    const calls = stubFetch({
      'GET /api/v1/instance-groups/g': () => json({ name: 'g' }, 200, { ETag: '"7"' }),
      'PUT /api/v1/instance-groups/g': () => json({ name: 'g' }),
    });
    const r = await requestWithEtag<{ name: string }>('/api/v1/instance-groups/g');
    expect(r.etag).toBe('"7"');
    await api.put('/api/v1/instance-groups/g', { quotaBytes: 5 }, r.etag);
    expect(calls[1].headers['If-Match']).toBe('"7"');
    expect(JSON.parse(calls[1].body!)).toEqual({ quotaBytes: 5 });
  });

  it('builds query strings of the set parameters only', () => {
    expect(qs({ group: 'g', instance: undefined, step: '1m', page: 0 })).toBe('?group=g&step=1m&page=0');
    expect(qs({})).toBe('');
  });
});
