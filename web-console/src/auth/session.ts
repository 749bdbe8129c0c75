// The signed-in session lives in sessionStorage (per tab, gone when the tab closes).
export type Role = 'admin' | 'operator' | 'tenant';

export interface Session {
  user: string;
  token: string;
  role: Role;
  groups: string[];
  expiresAt?: string;
}

export const SESSION_KEY = 'kvpool.session';

export function loadSession(): Session | null {
  try {
    const raw = sessionStorage.getItem(SESSION_KEY);
    if (!raw) {
      return null;
    }
    const s = JSON.parse(raw) as Session;
    return s && typeof s.token === 'string' && s.token ? s : null;
  } catch {
    return null;
  }
}

export function saveSession(s: Session): void {
  sessionStorage.setItem(SESSION_KEY, JSON.stringify(s));
}

export function clearSession(): void {
  sessionStorage.removeItem(SESSION_KEY);
}

export function normalizeRole(r: string | undefined): Role {
  const v = (r ?? '').toLowerCase();
  return v === 'admin' || v === 'operator' ? v : 'tenant';
}
