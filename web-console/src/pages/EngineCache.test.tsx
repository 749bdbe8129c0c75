import { describe, expect, it } from 'vitest';
import { screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { Route, Routes } from 'react-router-dom';
import App from '../App';
import EngineCaches from './EngineCaches';
import EngineCachePage from './EngineCache';
import { json, renderWithProviders, signInAs, stubFetch, type FetchCall } from '../testing/utils';

const cache = {
  instance_id: 'i1',
  pods: [
    { pod: 'pod-b', source: 'kafka', visible: true, state: 'uncertain', tiers: { gpu: 100, cpu: 40 },
      last_event_at: '2026-11-27T10:00:00Z', last_seq: 812 },
    { pod: 'pod-a', source: 'zmq', visible: true, state: 'live', tiers: { gpu: 300, cpu: 0, disk: 12 },
      last_event_at: '2026-11-27T10:01:00Z', last_seq: 1200 },
    { pod: 'pod-c', source: 'kvcm', visible: false, state: 'replaying', tiers: { gpu: 7 }, last_event_at: null, last_seq: null },
  ],
  pool: { keys: 5000 },
  router: {
    queries: 20, prompt_blocks: 400, routed_hit_blocks: 300, routed_hit_rate: 0.75, random_hit_rate: 0.25, pool_hit_rate: 0.5,
    series: [
      { minute: '2026-11-27T10:00:00Z', queries: 12, routed_hit_rate: 0.7, random_hit_rate: 0.2, pool_hit_rate: 0.5 },
      { minute: '2026-11-27T10:01:00Z', queries: 8, routed_hit_rate: 0.8, random_hit_rate: 0.3, pool_hit_rate: 0.5 },
    ],
  },
};
const instance = { instanceId: 'i1', group: 'g1', blockSize: 16, hashScheme: 'kvcm' };
const meta = { instance_id: 'i1', instance_group: 'g1', block_size: 16, hash_scheme: 'kvcm', specs: ['tp0', 'tp1'],
  bytes_per_block: 1024, keys: 4999 };
const group = { name: 'g1', storageCandidates: ['nfs-1', 'mooncake-1'] };

function routes(over: Record<string, (c: FetchCall) => Response> = {}) {
  return {
    'GET /api/v1/meta/engine/instances/i1/cache': () => json(cache),
    'GET /api/v1/instances/i1': () => json(instance),
    'GET /api/v1/meta/instances/i1': () => json(meta),
    'GET /api/v1/instance-groups/g1': () => json(group),
    ...over,
  };
}

function renderPage(route = '/engine/i1') {
  return renderWithProviders(
    <Routes>
      <Route path="/engine" element={<EngineCaches />} />
      <Route path="/engine/:id" element={<EngineCachePage />} />
    </Routes>, { route });
}

describe('engine caches list', () => {
  it('lists the instances engines report for, tolerating a wrapped list', async () => {
    signInAs('operator');
    stubFetch({ 'GET /api/v1/meta/engine/instances': () => json({ items: [{ instance_id: 'i2', pods: 1, registered: false },
      { instance_id: 'i1', pods: 3, instance_group: 'g1', registered: true, visible_pods: 2, uncertain_pods: 1 }] }) });
    renderPage('/engine');
    const table = await screen.findByTestId('engine-instances-table');
    const rows = within(table).getAllByTestId(/^engine-instance-row-/);
    expect(rows.map((r) => r.getAttribute('data-testid'))).toEqual(['engine-instance-row-i1', 'engine-instance-row-i2']);
    expect(within(rows[0]).getByTestId('engine-instance-pods')).toHaveTextContent('3');
    expect(within(rows[0]).getByTestId('engine-instance-link')).toHaveAttribute('href', '/engine/i1');
    expect(within(rows[0]).getByTestId('engine-instance-visible')).toHaveTextContent('2');
    expect(within(rows[0]).getByTestId('engine-instance-uncertain')).toHaveTextContent('1');
    expect(within(rows[0]).queryByTestId('engine-instance-unregistered')).toBeNull();
    expect(within(rows[1]).getByTestId('engine-instance-unregistered')).toHaveTextContent('not registered');
    expect(within(rows[1]).getByTestId('engine-instance-visible')).toHaveTextContent('–');
  });

  it('is not offered to a tenant, who reaches its instances\' engine caches from their pages', async () => {
    signInAs('tenant', ['g1']);
    const calls = stubFetch({ ...routes(), 'GET /api/v1/services': () => json({}), 'GET /api/v1/stats/summary': () => json({}) });
    renderWithProviders(<App />, { route: '/engine' });
    expect(await screen.findByTestId('forbidden')).toBeInTheDocument();
    expect(screen.queryByTestId('nav-engine')).toBeNull();
    expect(calls.filter((c) => c.url.includes('/engine'))).toEqual([]);
  });

  it('says so when no engine reports yet', async () => {
    signInAs('admin');
    stubFetch({ 'GET /api/v1/meta/engine/instances': () => json([]) });
    renderPage('/engine');
    expect(await screen.findByTestId('engine-instances-empty')).toHaveTextContent('No engine reports yet');
  });

  it('shows a failure with a retry, never an endless spinner', async () => {
    signInAs('admin');
    stubFetch({ 'GET /api/v1/meta/engine/instances': () => json({ status: 503, title: 'Service Unavailable',
      detail: 'no metadata plane reachable at http://127.0.0.1:6382' }, 503) });
    renderPage('/engine');
    const err = await screen.findByTestId('error-state');
    expect(err).toHaveTextContent('engine caches: service unavailable');
    expect(err).toHaveTextContent('no metadata plane reachable');
    expect(within(err).getByText('Retry')).toBeInTheDocument();
  });
});

describe('one instance: where its cache lives', () => {
  it('shows every pod per tier with its state, hidden pods marked, totals, and the pool', async () => {
    signInAs('tenant', ['g1']);
    stubFetch(routes());
    renderPage();
    const table = await screen.findByTestId('engine-pods-table');
    // tiers: device, host, then others
    expect(within(table).getAllByRole('columnheader').map((h) => h.textContent)).toEqual(
      ['Pod', 'Source', 'State', 'Engine GPU (gpu)', 'Engine host (cpu)', 'Engine disk', 'All tiers', 'Last event', 'Last sequence']);
    const a = screen.getByTestId('engine-pod-pod-a');
    expect(a).toHaveAttribute('data-state', 'live');
    expect(within(a).getByTestId('pod-state')).toHaveTextContent('live');
    expect(within(a).getByText('zmq')).toBeInTheDocument();
    expect(within(a).getAllByTestId('pod-tier-gpu')[0]).toHaveTextContent('300');
    const b = screen.getByTestId('engine-pod-pod-b');
    expect(within(b).getByTestId('pod-state')).toHaveTextContent('uncertain');
    expect(within(b).getByTestId('pod-tier-disk')).toHaveTextContent('0');
    expect(screen.getByTestId('uncertain-warning')).toBeInTheDocument();
    const c = screen.getByTestId('engine-pod-pod-c');
    expect(c).toHaveAttribute('data-visible', 'false');
    expect(within(c).getByTestId('pod-hidden')).toHaveTextContent('hidden');
    expect(within(c).getByTestId('pod-state')).toHaveTextContent('replaying');
    expect(within(a).queryByTestId('pod-hidden')).toBeNull();
    // totals: all pods, and the pods the router uses
    expect(screen.getByTestId('tier-totals-gpu')).toHaveTextContent('407');
    expect(screen.getByTestId('tier-totals-all')).toHaveTextContent('459');
    expect(screen.getByTestId('tier-totals-visible-gpu')).toHaveTextContent('400');
    expect(screen.getByTestId('tier-totals-visible')).toHaveTextContent('1 hidden pod left out');
    expect(screen.getByTestId('where-gpu')).toHaveTextContent('407');
    expect(screen.getByTestId('where-cpu')).toHaveTextContent('40');
    expect(screen.getByTestId('where-pool')).toHaveTextContent('5,000');
    // the pool's own tiers
    expect(await screen.findByTestId('pool-keys')).toHaveTextContent('5,000');
    expect(screen.getByTestId('pool-tiers')).toHaveTextContent('tp0, tp1');
    expect(await screen.findByTestId('pool-storages')).toHaveTextContent('nfs-1, mooncake-1');
  });

  it('shows the three hit rates and the per-minute chart', async () => {
    signInAs('admin');
    stubFetch(routes());
    renderPage();
    expect(await screen.findByTestId('rate-routed-value')).toHaveTextContent('75.0 %');
    expect(screen.getByTestId('rate-random-value')).toHaveTextContent('25.0 %');
    expect(screen.getByTestId('rate-pool-value')).toHaveTextContent('50.0 %');
    expect(screen.getByTestId('router-queries')).toHaveTextContent('20');
    const chart = await screen.findByTestId('router-chart', {}, { timeout: 5000 });
    expect(chart).toHaveAttribute('data-points', '6');
  });

  it('an instance no engine reports for: empty pods and router, the pool still shown', async () => {
    signInAs('admin');
    stubFetch(routes({ 'GET /api/v1/meta/engine/instances/i1/cache': () => json({ instance_id: 'i1', pods: [], pool: { keys: 0 },
      router: { queries: 0, prompt_blocks: 0, routed_hit_blocks: 0, routed_hit_rate: null, random_hit_rate: null,
        pool_hit_rate: null, series: [] } }) }));
    renderPage();
    expect(await screen.findByTestId('engine-pods-empty')).toHaveTextContent('No engine pods report');
    expect(screen.getByTestId('router-empty')).toBeInTheDocument();
    expect(screen.queryByTestId('uncertain-warning')).toBeNull();
    expect(await screen.findByTestId('pool-keys')).toHaveTextContent('0');
    expect(screen.getByTestId('score-form')).toBeInTheDocument();
  });

  it('an instance only engines know (not registered with the pool) says so instead of failing', async () => {
    signInAs('admin');
    stubFetch(routes({
      'GET /api/v1/meta/engine/instances/i1/cache': () => json({ ...cache, pool: { keys: 0 } }),
      'GET /api/v1/instances/i1': () => json({ status: 404, title: 'Not Found', detail: 'no instance i1' }, 404),
    }));
    renderPage();
    expect(await screen.findByTestId('pool-unregistered')).toHaveTextContent('Not registered with the pool');
    expect(screen.getByTestId('engine-pods-table')).toBeInTheDocument();
    expect(screen.queryByTestId('error-state')).toBeNull();
  });

  it('a failed cache fetch is shown in both cards, the score form stays usable', async () => {
    signInAs('admin');
    stubFetch(routes({ 'GET /api/v1/meta/engine/instances/i1/cache': () => json({ status: 404, title: 'Not Found',
      detail: 'no instance i1' }, 404) }));
    renderPage();
    const errs = await screen.findAllByTestId('error-state');
    expect(errs[0]).toHaveTextContent('engine caches of i1 not found');
    expect(errs[0]).toHaveTextContent('no instance i1 (HTTP 404)');
    expect(screen.getByTestId('score-form')).toBeInTheDocument();
  });
});

describe('score a prompt', () => {
  const answer = {
    instance_id: 'i1', blocks: 4,
    pods: [
      { pod: 'pod-b', longest_prefix: 2, prefix_per_tier: { gpu: 2 }, score: 2 },
      { pod: 'pod-a', longest_prefix: 4, prefix_per_tier: { gpu: 3, cpu: 4 }, score: 3.8 },
    ],
    pool: { serving_prefix: 1 },
  };

  it('sends the token ids and weights, and lists the pods best first with the pool prefix', async () => {
    signInAs('tenant', ['g1']);
    const calls = stubFetch(routes({ 'POST /api/v1/meta/engine/scores': () => json(answer) }));
    renderPage();
    await userEvent.click(await screen.findByTestId('score-input'));
    await userEvent.paste('1, 2, 3, 4, 5, 6, 7, 8');
    await userEvent.type(screen.getByTestId('score-weights'), 'gpu=1, cpu=0.5');
    await userEvent.click(screen.getByTestId('score-run'));
    const table = await screen.findByTestId('score-table');
    const rows = within(table).getAllByTestId(/^score-row-/);
    expect(rows.map((r) => r.getAttribute('data-testid'))).toEqual(['score-row-pod-a', 'score-row-pod-b']);
    expect(within(rows[0]).getByTestId('score-value')).toHaveTextContent('3.80');
    expect(within(rows[0]).getByTestId('score-prefix')).toHaveTextContent('4');
    expect(screen.getByTestId('score-summary')).toHaveTextContent('4 blocks; the pool serves a prefix of 1');
    const post = calls.find((c) => c.method === 'POST')!;
    expect(JSON.parse(post.body!)).toEqual({ instance_id: 'i1', token_ids: [1, 2, 3, 4, 5, 6, 7, 8], tier_weights: { gpu: 1, cpu: 0.5 } });
  });

  it('sends block keys with all their digits', async () => {
    signInAs('admin');
    const calls = stubFetch(routes({ 'POST /api/v1/meta/engine/scores': () => json({ ...answer, pods: [] }) }));
    renderPage();
    await userEvent.click(await screen.findByTestId('score-mode-keys'));
    await userEvent.click(screen.getByTestId('score-input'));
    await userEvent.paste('18446744073709551615 -1');
    await userEvent.click(screen.getByTestId('score-run'));
    expect(await screen.findByTestId('score-no-pods')).toBeInTheDocument();
    expect(calls.find((c) => c.method === 'POST')!.body).toBe('{"instance_id":"i1","block_keys":[18446744073709551615,-1]}');
  });

  it('refuses bad input before sending, and shows a 400 problem against its field', async () => {
    signInAs('admin');
    const calls = stubFetch(routes({ 'POST /api/v1/meta/engine/scores': () => json({ type: 'about:blank', title: 'Bad Request',
      status: 400, detail: 'tier_weights.hbm2: must be a finite number >= 0, got NaN' }, 400) }));
    renderPage();
    await userEvent.type(await screen.findByTestId('score-input'), '1, two');
    await userEvent.type(screen.getByTestId('score-weights'), 'gpu=-2');
    await userEvent.click(screen.getByTestId('score-run'));
    const errors = await screen.findAllByTestId('field-error');
    expect(errors.map((e) => e.textContent)).toEqual([expect.stringMatching(/token 2/), expect.stringMatching(/≥ 0/)]);
    expect(calls.some((c) => c.method === 'POST')).toBe(false);

    await userEvent.clear(screen.getByTestId('score-input'));
    await userEvent.type(screen.getByTestId('score-input'), '1 2 3');
    await userEvent.clear(screen.getByTestId('score-weights'));
    await userEvent.type(screen.getByTestId('score-weights'), 'hbm2=1');
    await userEvent.click(screen.getByTestId('score-run'));
    const alert = await screen.findByTestId('score-error');
    expect(alert).toHaveTextContent('The server refused this prompt');
    expect(alert).toHaveTextContent('tier_weights.hbm2: must be a finite number >= 0, got NaN (HTTP 400)');
    // the plane's problems name no field: its detail names it, and the message goes under that field
    expect(screen.getByTestId('field-error')).toHaveTextContent('tier_weights.hbm2');
    expect(screen.getByTestId('score-weights')).toHaveAttribute('aria-invalid', 'true');
    expect(screen.queryByTestId('score-result')).toBeNull();
  });
});
