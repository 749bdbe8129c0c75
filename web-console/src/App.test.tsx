import { describe, expect, it } from 'vitest';
import { screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import App from './App';
import { json, renderWithProviders, signInAs, stubFetch } from './testing/utils';

const summary = {
  groups: [{ group: 'team-a', quotaBytes: 1000, usedBytes: 400, usageByType: { nfs: 400 }, softPercent: 80, hardPercent: 95,
    hitRate: { last5m: 0.4, lastHour: 0.38, lastDay: 0.3 }, queriesLastHour: 10, evictionsPerMinute: { water_level: 0.5 } }],
  instances: [],
  totals: { groups: 1, instances: 0, storages: 1, quotaBytes: 1000, usedBytes: 400, hitRateLastHour: 0.38 },
};
const services = {
  controlPlane: { status: 'UP', version: '0.1.0' },
  metadataPlanes: [{ id: 'meta-1', leader: true, status: 'UP' }, { id: 'meta-2', leader: false, status: 'DOWN' }],
  agents: [],
};
const series = { step: 'PT1M', points: [] };

function overviewRoutes() {
  return {
    'GET /api/v1/services': () => json(services),
    'GET /api/v1/stats/summary': () => json(summary),
    'GET /api/v1/stats/series': () => json(series),
  };
}

describe('role-based navigation', () => {
  it('a tenant sees no Storages, Accounts or What-if, and the overview fetches nothing it may not see', async () => {
    signInAs('tenant', ['team-a']);
    const calls = stubFetch(overviewRoutes());
    renderWithProviders(<App />);
    const nav = await screen.findByRole('navigation', { name: 'Console' });
    expect(within(nav).getByText('Overview')).toBeInTheDocument();
    expect(within(nav).getByText('Instance groups')).toBeInTheDocument();
    expect(within(nav).getByText('Instances')).toBeInTheDocument();
    expect(within(nav).queryByText('Storages')).toBeNull();
    expect(within(nav).queryByText('Accounts')).toBeNull();
    expect(within(nav).queryByText('What-if capacity')).toBeNull();
    expect(screen.getByTestId('masthead-role')).toHaveTextContent('tenant');
    expect(screen.getByTestId('masthead-groups')).toHaveTextContent('team-a');
    await screen.findByTestId('group-card-team-a');
    const urls = calls.map((c) => c.url);
    expect(urls.some((u) => u.includes('/storages') || u.includes('/accounts') || u.includes('/whatif'))).toBe(false);
  });

  it('an admin sees every page', async () => {
    signInAs('admin');
    stubFetch(overviewRoutes());
    renderWithProviders(<App />);
    const nav = await screen.findByRole('navigation', { name: 'Console' });
    for (const label of ['Overview', 'Instance groups', 'Instances', 'Storages', 'Accounts', 'What-if capacity']) {
      expect(within(nav).getByText(label)).toBeInTheDocument();
    }
  });

  it('an operator sees no Accounts', async () => {
    signInAs('operator');
    stubFetch(overviewRoutes());
    renderWithProviders(<App />);
    const nav = await screen.findByRole('navigation', { name: 'Console' });
    expect(within(nav).getByText('Storages')).toBeInTheDocument();
    expect(within(nav).queryByText('Accounts')).toBeNull();
  });

  it('a tenant typing another group\'s address gets a refusal without a request for it', async () => {
    signInAs('tenant', ['team-a']);
    const calls = stubFetch(overviewRoutes());
    renderWithProviders(<App />, { route: '/groups/team-b' });
    expect(await screen.findByTestId('forbidden')).toBeInTheDocument();
    expect(calls.map((c) => c.url).filter((u) => u.includes('team-b'))).toEqual([]);
  });

  it('a tenant on /storages or /whatif fetches nothing', async () => {
    signInAs('tenant', ['team-a']);
    const calls = stubFetch(overviewRoutes());
    renderWithProviders(<App />, { route: '/storages' });
    expect(await screen.findByTestId('forbidden')).toBeInTheDocument();
    expect(calls.map((c) => c.url).filter((u) => u.includes('/storages'))).toEqual([]);
  });
});

describe('overview', () => {
  it('shows a DOWN replica as DOWN and the leader badge', async () => {
    signInAs('admin');
    stubFetch(overviewRoutes());
    renderWithProviders(<App />);
    const down = await screen.findByTestId('service-meta-meta-2');
    expect(within(down).getByTestId('service-status')).toHaveTextContent('DOWN');
    const leader = screen.getByTestId('service-meta-meta-1');
    expect(within(leader).getByTestId('leader-badge')).toBeInTheDocument();
    expect(screen.getByTestId('total-hit-rate')).toHaveTextContent('38.0 %');
  });

  it('a failed fetch shows an error, not an endless spinner', async () => {
    signInAs('admin');
    stubFetch({
      ...overviewRoutes(),
      'GET /api/v1/services': () => json({ status: 503, title: 'Service unavailable', detail: 'database unavailable' }, 503),
    });
    renderWithProviders(<App />);
    const card = await screen.findByTestId('services-card');
    await waitFor(() => expect(within(card).getByTestId('error-state')).toHaveTextContent('database unavailable'));
  });
});

describe('sign-in', () => {
  it('an expired session goes to sign-in and comes back to the same page', async () => {
    signInAs('admin');
    let expired = true;
    stubFetch({
      ...overviewRoutes(),
      'GET /api/v1/instance-groups': () => (expired
        ? json({ status: 401, title: 'Unauthorized', detail: 'token expired' }, 401)
        : json({ items: [{ name: 'team-a', quotaBytes: 1000, storageTypeQuotas: {}, waterLevels: { softPercent: 80, hardPercent: 95 },
          eviction: { policy: 'LRU' }, storageCandidates: ['nfs_01'], maxInstanceCount: 0, allowAnonymousMeta: false }], page: 0, size: 500, total: 1 })),
      'POST /api/v1/tokens': () => json({ token: 'fresh', tokenType: 'Bearer', expiresAt: '2030-01-01T00:00:00Z', role: 'admin', groups: [] }),
    });
    renderWithProviders(<App />, { route: '/groups?x=1' });
    expect(await screen.findByTestId('sign-in-form')).toBeInTheDocument();
    expect(screen.getByTestId('session-expired')).toBeInTheDocument();
    expired = false;
    await userEvent.type(screen.getByLabelText(/User name/), 'admin');
    await userEvent.type(screen.getByLabelText(/Password/), 'Admin-Passw0rd!');
    await userEvent.click(screen.getByTestId('sign-in-submit'));
    expect(await screen.findByTestId('groups-table')).toBeInTheDocument();
    expect(screen.getByTestId('group-row-team-a')).toBeInTheDocument();
  });

  it('a wrong password is refused with a message', async () => {
    stubFetch({ 'POST /api/v1/tokens': () => json({ status: 401, detail: 'wrong user name or password' }, 401) });
    renderWithProviders(<App />, { route: '/' });
    await userEvent.type(await screen.findByLabelText(/User name/), 'admin');
    await userEvent.type(screen.getByLabelText(/Password/), 'nope');
    await userEvent.click(screen.getByTestId('sign-in-submit'));
    expect(await screen.findByTestId('sign-in-error')).toHaveTextContent('Wrong user name or password');
  });
});
