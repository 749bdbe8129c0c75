// Client-side checks that mirror the servers' rules, so a form says what is wrong before sending.
import { ApiError } from '../api/client';

export const MAX_NAME = 128;

export type NameKind = 'group' | 'instance' | 'storage' | 'account' | 'trace';

/**
 * dev.kvpool.api.naming.Identifiers: 1–128 characters of A-Z a-z 0-9 . _ - (accounts also @), not starting with
 * '.' or '-'. Null when valid, else why not.
 */
export function nameProblem(value: string, kind: NameKind = 'group'): string | null {
  if (!value) {
    return 'must not be empty';
  }
  if (value.length > MAX_NAME) {
    return `must be at most ${MAX_NAME} characters, got ${value.length}`;
  }
  if (value[0] === '.' || value[0] === '-') {
    return `must not start with '${value[0]}'`;
  }
  const re = kind === 'account' ? /^[A-Za-z0-9._@-]$/ : /^[A-Za-z0-9._-]$/;
  for (let i = 0; i < value.length; i++) {
    if (!re.test(value[i])) {
      return `must hold only letters, digits, '.', '_' and '-'${kind === 'account' ? " and '@'" : ''}; character ${i} is '${value[i]}'`;
    }
  }
  return null;
}

/** An integer from a form field; '' is "not set". */
export function parseInteger(raw: string): number | null | undefined {
  const t = raw.trim();
  if (t === '') {
    return undefined;
  }
  if (!/^-?\d+$/.test(t)) {
    return null;
  }
  const n = Number(t);
  return Number.isSafeInteger(n) ? n : null;
}

/** Null when raw is an integer within [min, max] (or empty and optional), else why not. */
export function intProblem(raw: string, min: number, max: number, required = true): string | null {
  const n = parseInteger(raw);
  if (n === undefined) {
    return required ? 'is required' : null;
  }
  if (n === null) {
    return 'must be a whole number';
  }
  if (n < min || n > max) {
    return `must be between ${min.toLocaleString('en-US')} and ${max.toLocaleString('en-US')}`;
  }
  return null;
}

export function numberProblem(raw: string, min: number, max: number, required = true): string | null {
  const t = raw.trim();
  if (t === '') {
    return required ? 'is required' : null;
  }
  const n = Number(t);
  if (!Number.isFinite(n)) {
    return 'must be a number';
  }
  if (n < min || n > max) {
    return `must be between ${min} and ${max}`;
  }
  return null;
}

/** PasswordHasher.weakness: 12+ characters, 3 of 4 character classes, not containing the account name. */
export function passwordProblem(password: string, name?: string): string | null {
  if (password.length < 12) {
    return 'password must have at least 12 characters';
  }
  const classes = [/[a-z]/, /[A-Z]/, /[0-9]/, /[^A-Za-z0-9]/].filter((r) => r.test(password)).length;
  if (classes < 3) {
    return 'password must mix at least 3 of: lower case, upper case, digits, other characters';
  }
  if (name && password.toLowerCase().includes(name.toLowerCase())) {
    return 'password must not contain the account name';
  }
  if (password.length > 1024) {
    return 'password must be at most 1024 characters';
  }
  return null;
}

const SUFFIX: Record<string, number> = { '': 1, K: 1e3, M: 1e6, G: 1e9, T: 1e12 };

/** "64K", "1.5M", "2G", "1000000" → a whole number of tokens (decimal suffixes). Null when unreadable. */
export function parseCount(raw: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([kKmMgGtT]?)\s*$/.exec(raw.replace(/_/g, '').replace(/,/g, ''));
  if (!m) {
    return null;
  }
  const n = Math.round(Number(m[1]) * SUFFIX[m[2].toUpperCase()]);
  return Number.isSafeInteger(n) ? n : null;
}

const BYTE_SUFFIX: Record<string, number> = {
  '': 1, B: 1, K: 1024, KB: 1e3, KIB: 1024, M: 1024 ** 2, MB: 1e6, MIB: 1024 ** 2, G: 1024 ** 3, GB: 1e9,
  GIB: 1024 ** 3, T: 1024 ** 4, TB: 1e12, TIB: 1024 ** 4,
};

/** "30000000000", "30GB", "28GiB", "1.5T" → bytes. Null when unreadable. */
export function parseBytes(raw: string): number | null {
  const m = /^\s*(\d+(?:\.\d+)?)\s*([a-zA-Z]*)\s*$/.exec(raw.replace(/_/g, '').replace(/,/g, ''));
  if (!m) {
    return null;
  }
  const mult = BYTE_SUFFIX[m[2].toUpperCase()];
  if (mult === undefined) {
    return null;
  }
  const n = Math.round(Number(m[1]) * mult);
  return Number.isSafeInteger(n) ? n : null;
}

export function bytesProblem(raw: string, min: number, max: number, required = true): string | null {
  if (raw.trim() === '') {
    return required ? 'is required' : null;
  }
  const n = parseBytes(raw);
  if (n === null) {
    return 'must be a number of bytes (e.g. 30000000000, 30GB or 28GiB)';
  }
  if (n < min || n > max) {
    return `must be between ${min.toLocaleString('en-US')} and ${max.toLocaleString('en-US')} bytes`;
  }
  return null;
}

/**
 * Token ids from a textarea or a file: a JSON array (or {"token_ids": [...]}) or numbers separated by commas,
 * spaces or new lines. Throws with a message naming the first bad entry.
 */
export function parseTokenIds(raw: string): number[] {
  const t = raw.trim();
  if (!t) {
    throw new Error('enter at least one token id');
  }
  let items: unknown[];
  if (t.startsWith('[') || t.startsWith('{')) {
    let j: unknown;
    try {
      j = JSON.parse(t);
    } catch (e) {
      throw new Error(`not valid JSON: ${e instanceof Error ? e.message : String(e)}`);
    }
    if (Array.isArray(j)) {
      items = j;
    } else if (j && typeof j === 'object' && Array.isArray((j as { token_ids?: unknown }).token_ids)) {
      items = (j as { token_ids: unknown[] }).token_ids;
    } else {
      throw new Error('JSON must be an array of token ids or {"token_ids": [...]}');
    }
  } else {
    items = t.split(/[\s,;]+/).filter((x) => x !== '');
  }
  const out: number[] = [];
  items.forEach((v, i) => {
    const n = typeof v === 'number' ? v : typeof v === 'string' && /^-?\d+$/.test(v.trim()) ? Number(v) : NaN;
    if (!Number.isSafeInteger(n)) {
      throw new Error(`token ${i + 1} ('${String(v).slice(0, 20)}') is not a whole number`);
    }
    out.push(n);
  });
  if (out.length === 0) {
    throw new Error('enter at least one token id');
  }
  return out;
}

export type FieldErrors = Record<string, string | undefined>;

export function hasErrors(e: FieldErrors): boolean {
  return Object.values(e).some((v) => !!v);
}

/**
 * The form field a server problem names: its `field` as is when the form has it, else without an index
 * (`storageCandidates[2]` → `storageCandidates`), else its nearest parent (`spec.root_path` → `spec`).
 * Undefined when the form has no such field (the alert above the form shows the detail then).
 */
export function fieldOfProblem(field: string | undefined, formFields: readonly string[]): string | undefined {
  if (!field) {
    return undefined;
  }
  const candidates: string[] = [field, field.replace(/\[\d+\]/g, '')];
  let f = field.replace(/\[\d+\]/g, '');
  while (f.includes('.')) {
    f = f.slice(0, f.lastIndexOf('.'));
    candidates.push(f);
  }
  // also a leaf name alone: eviction.policy → policy
  candidates.push(field.replace(/\[\d+\]/g, '').split('.').pop() ?? field);
  return candidates.find((c) => formFields.includes(c));
}

/** Field errors for a refusal: the server's detail next to the field it names; `form` holds the rest. */
export function serverErrors(e: unknown, formFields: readonly string[]): { fields: FieldErrors; form?: string } {
  if (e instanceof ApiError) {
    const f = fieldOfProblem(e.field, formFields);
    if (f) {
      return { fields: { [f]: e.detail } };
    }
    return { fields: {}, form: e.detail };
  }
  return { fields: {}, form: e instanceof Error ? e.message : String(e) };
}
