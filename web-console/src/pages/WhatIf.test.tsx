import { describe, expect, it } from 'vitest';
import { screen, waitFor } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import App from '../App';
import { json, renderWithProviders, signInAs, stubFetch } from '../testing/utils';

const running = {
  id: 'j1', state: 'running', error: null, request: { trace: 'conversation', policies: ['LRU', 'LFU'] },
  trace: { name: 'conversation', requests: 100, blocks: 1000, distinct: 500, blockTokens: 512 },
  progress: { runsDone: 1, runsTotal: 4, accessesDone: 250, accessesTotal: 1000, fraction: 0.25 },
  startedAt: '2026-11-27T10:00:00Z', finishedAt: null, elapsedSeconds: 1.5, accessesPerSecond: 1e6,
  ceiling: { hitRate: 0.5 },
  results: [{ policy: 'LRU', capacityTokens: 100000, capacityBlocks: 195, hitRate: 0.1, hitBlocks: 1, queriedBlocks: 10,
    writtenBlocks: 9, evictedBlocks: 0, refusedBlocks: 0 }],
  smallest: null,
};

describe('what-if page', () => {
  it('starts a run with a capacity range in tokens, shows its progress and cancels it', async () => {
    signInAs('operator');
    let state = 'running';
    const calls = stubFetch({
      'GET /api/v1/meta/whatif/traces': () => json([{ name: 'conversation', kind: 'example', requests: 100, blocks: 1000, bytes: 5000 }]),
      'GET /api/v1/meta/whatif/runs': () => json([]),
      'POST /api/v1/meta/whatif/runs': () => json({ ...running, state: 'queued', progress: { ...running.progress, fraction: 0 } }, 202),
      'GET /api/v1/meta/whatif/runs/j1': () => json({ ...running, state }),
      'DELETE /api/v1/meta/whatif/runs/j1': () => { state = 'cancelled'; return json({ ...running, state }); },
      'GET /api/v1/instance-groups': () => json({ items: [], page: 0, size: 500, total: 0 }),
    });
    renderWithProviders(<App />, { route: '/whatif' });
    await waitFor(() => expect(screen.getByLabelText(/^Trace/)).toHaveValue('conversation'));
    await userEvent.click(screen.getByLabelText('TTL'));
    await userEvent.click(screen.getByLabelText('PREFIX_LRU'));
    const min = screen.getByLabelText(/Minimum capacity/);
    await userEvent.clear(min);
    await userEvent.type(min, '64K');
    await userEvent.click(screen.getByTestId('whatif-run'));
    await screen.findByTestId('whatif-run-view');
    const post = calls.find((c) => c.method === 'POST')!;
    expect(JSON.parse(post.body!)).toEqual({ trace: 'conversation', policies: ['LRU', 'LFU'],
      capacityRange: { min: 64000, max: 100000000, points: 8 }, water: 0.9, target: { policy: 'LRU', hitRate: 0.3 } });
    expect(await screen.findByTestId('whatif-run-id')).toHaveTextContent('j1');
    await waitFor(() => expect(screen.getByTestId('whatif-run-view')).toHaveAttribute('data-state', 'running'));
    expect(screen.getByText('1 of 4 replays, 250 of 1K block accesses')).toBeInTheDocument();
    await userEvent.click(screen.getByTestId('whatif-cancel'));
    await waitFor(() => expect(calls.some((c) => c.method === 'DELETE')).toBe(true));
    await waitFor(() => expect(screen.getByTestId('whatif-run-view')).toHaveAttribute('data-state', 'cancelled'));
  });

  it('refuses a bad range before sending', async () => {
    signInAs('admin');
    const calls = stubFetch({
      'GET /api/v1/meta/whatif/traces': () => json([{ name: 'conversation', kind: 'example', requests: 1, blocks: 1, bytes: 1 }]),
      'GET /api/v1/meta/whatif/runs': () => json([]),
    });
    renderWithProviders(<App />, { route: '/whatif' });
    await waitFor(() => expect(screen.getByLabelText(/^Trace/)).toHaveValue('conversation'));
    const max = screen.getByLabelText(/Maximum capacity/);
    await userEvent.clear(max);
    await userEvent.type(max, '10Q');
    await userEvent.click(screen.getByTestId('whatif-run'));
    expect(await screen.findByText(/a positive number of tokens, e.g. 100M/)).toBeInTheDocument();
    expect(calls.some((c) => c.method === 'POST')).toBe(false);
  });
});
