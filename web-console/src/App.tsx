import { lazy, Suspense, type ReactNode } from 'react';
import { Route, Routes } from 'react-router-dom';
import { QueryCache, QueryClient, MutationCache } from '@tanstack/react-query';
import { ApiError } from './api/client';
import { AuthProvider, RequireAuth, useSession } from './auth/AuthContext';
import { permissions, type Permissions } from './auth/roles';
import { AppLayout } from './components/AppLayout';
import { Forbidden, Loading, PageHeader } from './components/States';
import SignIn from './pages/SignIn';

// Pages are split out so the first paint (sign-in, overview shell) stays small; charts load with their pages.
const Overview = lazy(() => import('./pages/Overview'));
const Groups = lazy(() => import('./pages/Groups'));
const GroupDetail = lazy(() => import('./pages/GroupDetail'));
const GroupEdit = lazy(() => import('./pages/GroupEdit'));
const Instances = lazy(() => import('./pages/Instances'));
const InstanceDetail = lazy(() => import('./pages/InstanceDetail'));
const Storages = lazy(() => import('./pages/Storages'));
const Accounts = lazy(() => import('./pages/Accounts'));
const WhatIf = lazy(() => import('./pages/WhatIf'));
const EngineCaches = lazy(() => import('./pages/EngineCaches'));
const EngineCache = lazy(() => import('./pages/EngineCache'));

/** No retry for a refusal (4xx): show it at once. A network or 5xx failure is retried twice, then shown. */
export function shouldRetry(failureCount: number, error: unknown): boolean {
  if (error instanceof ApiError && error.status >= 400 && error.status < 500) {
    return false;
  }
  return failureCount < 2;
}

export function makeQueryClient(): QueryClient {
  return new QueryClient({
    queryCache: new QueryCache(),
    mutationCache: new MutationCache(),
    defaultOptions: {
      queries: { retry: shouldRetry, retryDelay: 500, staleTime: 2_000, refetchOnWindowFocus: false },
      mutations: { retry: false },
    },
  });
}

/** A page the role may not use is neither shown nor fetched. */
function Allowed({ needs, what, children }: { needs: keyof Permissions; what: string; children: ReactNode }) {
  const s = useSession();
  return permissions(s.role)[needs] ? <>{children}</> : <Forbidden what={what} />;
}

function NotFound() {
  return <PageHeader title="Page not found" testId="not-found" />;
}

function Shell() {
  return (
    <RequireAuth>
      <AppLayout>
        <Routes>
          <Route path="/" element={<Overview />} />
          <Route path="/groups" element={<Groups />} />
          <Route path="/groups/new" element={<Allowed needs="writeGroups" what="group editing"><GroupEdit /></Allowed>} />
          <Route path="/groups/:name" element={<GroupDetail />} />
          <Route path="/groups/:name/edit"
            element={<Allowed needs="writeGroups" what="group editing"><GroupEdit /></Allowed>} />
          <Route path="/instances" element={<Instances />} />
          <Route path="/instances/:id" element={<InstanceDetail />} />
          <Route path="/engine"
            element={<Allowed needs="engineInstances" what="the list of engine caches"><EngineCaches /></Allowed>} />
          <Route path="/engine/:id" element={<EngineCache />} />
          <Route path="/storages" element={<Allowed needs="storages" what="storages"><Storages /></Allowed>} />
          <Route path="/accounts" element={<Allowed needs="accounts" what="accounts"><Accounts /></Allowed>} />
          <Route path="/whatif" element={<Allowed needs="whatIf" what="what-if capacity"><WhatIf /></Allowed>} />
          <Route path="/whatif/:runId" element={<Allowed needs="whatIf" what="what-if capacity"><WhatIf /></Allowed>} />
          <Route path="*" element={<NotFound />} />
        </Routes>
      </AppLayout>
    </RequireAuth>
  );
}

export default function App() {
  return (
    <AuthProvider>
      <Suspense fallback={<Loading />}>
        <Routes>
          <Route path="/login" element={<SignIn />} />
          <Route path="/*" element={<Shell />} />
        </Routes>
      </Suspense>
    </AuthProvider>
  );
}
