import { createContext, useCallback, useContext, useEffect, useMemo, useState, type ReactNode } from 'react';
import { Navigate, useLocation } from 'react-router-dom';
import { useQueryClient } from '@tanstack/react-query';
import { request, setUnauthorizedHandler } from '../api/client';
import { clearSession, loadSession, normalizeRole, saveSession, type Session } from './session';

interface TokenResponse {
  token: string;
  tokenType: string;
  expiresAt: string;
  role: string;
  groups: string[] | null;
}

interface AuthState {
  session: Session | null;
  /** True after a 401 sent the user back: sign-in says the session expired. */
  expired: boolean;
  signIn: (user: string, password: string) => Promise<Session>;
  signOut: () => void;
}

const AuthContext = createContext<AuthState | null>(null);

export async function issueToken(user: string, password: string): Promise<Session> {
  const r = await request<TokenResponse>('/api/v1/tokens', {
    method: 'POST',
    body: { user, password },
    anonymous: true,
  });
  return {
    user,
    token: r.token,
    role: normalizeRole(r.role),
    groups: [...(r.groups ?? [])].sort(),
    expiresAt: r.expiresAt,
  };
}

export function AuthProvider({ children }: { children: ReactNode }) {
  const [session, setSession] = useState<Session | null>(() => loadSession());
  const [expired, setExpired] = useState(false);
  const qc = useQueryClient();

  useEffect(() => {
    setUnauthorizedHandler(() => {
      setSession(null);
      setExpired(true);
    });
    return () => setUnauthorizedHandler(() => {});
  }, []);

  const signIn = useCallback(async (user: string, password: string) => {
    const s = await issueToken(user, password);
    qc.clear();
    saveSession(s);
    setExpired(false);
    setSession(s);
    return s;
  }, [qc]);

  const signOut = useCallback(() => {
    clearSession();
    qc.clear();
    setExpired(false);
    setSession(null);
  }, [qc]);

  const value = useMemo(() => ({ session, expired, signIn, signOut }), [session, expired, signIn, signOut]);
  return <AuthContext.Provider value={value}>{children}</AuthContext.Provider>;
}

export function useAuth(): AuthState {
  const a = useContext(AuthContext);
  if (!a) {
    throw new Error('useAuth outside AuthProvider');
  }
  return a;
}

/** The signed-in session; only for components under RequireAuth. */
export function useSession(): Session {
  const { session } = useAuth();
  if (!session) {
    throw new Error('no session');
  }
  return session;
}

/** Sends an anonymous visitor (or an expired session) to /login?next=<this page>. */
export function RequireAuth({ children }: { children: ReactNode }) {
  const { session } = useAuth();
  const loc = useLocation();
  if (!session) {
    const next = loc.pathname + loc.search + loc.hash;
    const to = next && next !== '/' ? `/login?next=${encodeURIComponent(next)}` : '/login';
    return <Navigate to={to} replace />;
  }
  return <>{children}</>;
}

/** Where to go after sign-in: the remembered page, only if it is a path of this app. */
export function safeNext(next: string | null): string {
  if (!next || !next.startsWith('/') || next.startsWith('//') || next.startsWith('/login')) {
    return '/';
  }
  return next;
}
