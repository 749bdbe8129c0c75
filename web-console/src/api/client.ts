// The one way the console talks to the control plane: JSON over fetch, bearer token from the session,
// problem+json refusals turned into ApiError, and any 401 handed to the sign-in flow.
import { clearSession, loadSession } from '../auth/session';

/** RFC 9457 problem document as the control plane writes it (ProblemMappers). */
export interface Problem {
  type?: string;
  title?: string;
  status?: number;
  detail?: string;
  field?: string;
  [k: string]: unknown;
}

export class ApiError extends Error {
  readonly status: number;
  readonly problem: Problem;
  constructor(status: number, problem: Problem) {
    super(problem.detail || problem.title || `HTTP ${status}`);
    this.name = 'ApiError';
    this.status = status;
    this.problem = problem;
  }
  /** The field the server blamed (problem `field`), if any. */
  get field(): string | undefined {
    return typeof this.problem.field === 'string' ? this.problem.field : undefined;
  }
  get detail(): string {
    return this.message;
  }
}

/** A network failure (server down, proxy refused): status 0. */
export class NetworkError extends ApiError {
  constructor(message: string) {
    super(0, { title: 'Network error', detail: message, status: 0 });
    this.name = 'NetworkError';
  }
}

type UnauthorizedHandler = () => void;
let onUnauthorized: UnauthorizedHandler = () => {};

/** Called (once per 401) after the session was cleared; the auth provider sends the user to sign-in. */
export function setUnauthorizedHandler(h: UnauthorizedHandler): void {
  onUnauthorized = h;
}

/** Parses a refusal body: problem+json, any JSON with detail/message, or plain text. */
export async function parseProblem(res: Response): Promise<Problem> {
  const text = await res.text().catch(() => '');
  if (text) {
    try {
      const j = JSON.parse(text);
      if (j && typeof j === 'object' && !Array.isArray(j)) {
        const p = j as Problem;
        const detail = p.detail ?? (typeof j.message === 'string' ? j.message : undefined)
          ?? (typeof j.error === 'string' ? j.error : undefined);
        return { ...p, status: p.status ?? res.status, detail: detail ?? p.title ?? res.statusText };
      }
    } catch {
      // not JSON: fall through
    }
  }
  return {
    status: res.status,
    title: res.statusText || `HTTP ${res.status}`,
    detail: text.trim() ? text.trim().slice(0, 500) : `${res.status} ${res.statusText || 'error'}`.trim(),
  };
}

export interface RequestOptions {
  method?: string;
  body?: unknown;
  /** Raw body (e.g. a JSONL upload); sent as is with contentType. */
  rawBody?: BodyInit;
  contentType?: string;
  ifMatch?: string;
  signal?: AbortSignal;
  /** For sign-in: a 401 is a wrong password, not an expired session. */
  anonymous?: boolean;
}

export interface WithEtag<T> {
  data: T;
  etag: string | null;
}

/** Query string of the defined parameters. */
export function qs(params: Record<string, string | number | boolean | undefined | null>): string {
  const u = new URLSearchParams();
  for (const [k, v] of Object.entries(params)) {
    if (v !== undefined && v !== null && v !== '') {
      u.set(k, String(v));
    }
  }
  const s = u.toString();
  return s ? `?${s}` : '';
}

export async function requestRaw(path: string, opts: RequestOptions = {}): Promise<Response> {
  const headers: Record<string, string> = { Accept: 'application/json, application/problem+json' };
  const session = opts.anonymous ? null : loadSession();
  if (session) {
    headers.Authorization = `Bearer ${session.token}`;
  }
  let body: BodyInit | undefined;
  if (opts.rawBody !== undefined) {
    body = opts.rawBody;
    headers['Content-Type'] = opts.contentType ?? 'application/octet-stream';
  } else if (opts.body !== undefined) {
    body = JSON.stringify(opts.body);
    headers['Content-Type'] = 'application/json';
  }
  if (opts.ifMatch) {
    headers['If-Match'] = opts.ifMatch;
  }
  let res: Response;
  try {
    res = await fetch(path, { method: opts.method ?? 'GET', headers, body, signal: opts.signal });
  } catch (e) {
    if (e instanceof DOMException && e.name === 'AbortError') {
      throw e;
    }
    throw new NetworkError(`cannot reach the control plane (${e instanceof Error ? e.message : String(e)})`);
  }
  if (!res.ok) {
    const problem = await parseProblem(res);
    if (res.status === 401 && !opts.anonymous) {
      clearSession();
      onUnauthorized();
    }
    throw new ApiError(res.status, problem);
  }
  return res;
}

async function json<T>(res: Response): Promise<T> {
  if (res.status === 204) {
    return undefined as T;
  }
  const text = await res.text();
  return (text ? JSON.parse(text) : undefined) as T;
}

export async function request<T>(path: string, opts: RequestOptions = {}): Promise<T> {
  return json<T>(await requestRaw(path, opts));
}

/** GET (or any call) that also returns the ETag header, for If-Match on the next write. */
export async function requestWithEtag<T>(path: string, opts: RequestOptions = {}): Promise<WithEtag<T>> {
  const res = await requestRaw(path, opts);
  return { data: await json<T>(res), etag: res.headers.get('ETag') };
}

export const api = {
  get: <T>(path: string, signal?: AbortSignal) => request<T>(path, { signal }),
  post: <T>(path: string, body?: unknown) => request<T>(path, { method: 'POST', body }),
  put: <T>(path: string, body: unknown, ifMatch?: string | null) =>
    request<T>(path, { method: 'PUT', body, ifMatch: ifMatch ?? undefined }),
  del: (path: string, ifMatch?: string | null) =>
    request<void>(path, { method: 'DELETE', ifMatch: ifMatch ?? undefined }),
};

export function isApiError(e: unknown): e is ApiError {
  return e instanceof ApiError;
}

/** A short human message for any thrown value. */
export function errorMessage(e: unknown): string {
  if (e instanceof ApiError) {
    return e.status ? `${e.detail} (HTTP ${e.status})` : e.detail;
  }
  return e instanceof Error ? e.message : String(e);
}
