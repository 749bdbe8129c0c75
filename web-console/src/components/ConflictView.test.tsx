import { describe, expect, it, vi } from 'vitest';
import { render, screen, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { ConflictView } from './ConflictView';
import { groupConflictRows } from '../lib/groupForm';
import { emptyGroupForm } from '../lib/groupForm';
import type { Group } from '../api/types';

const current: Group = {
  name: 'search', quotaBytes: 50_000, storageTypeQuotas: {}, waterLevels: { softPercent: 70, hardPercent: 95 },
  eviction: { policy: 'LRU', triggerPeriodSeconds: 5, stepSize: 1000, stepPercentage: 10, ttlSeconds: 0, readerLeaseMs: 1000 },
  storageCandidates: ['nfs_01'], maxInstanceCount: 0, allowAnonymousMeta: false,
};

describe('ConflictView', () => {
  it('shows the current values beside the user\'s, differing rows first and marked', () => {
    const mine = { ...emptyGroupForm(), name: 'search', quotaBytes: '40000', softPercent: '80', storageCandidates: ['nfs_01'] };
    render(<ConflictView what="group search" detail="the resource changed" rows={groupConflictRows(current, mine)}
      onReapply={() => {}} onDiscard={() => {}} />);
    expect(screen.getByTestId('conflict-alert')).toHaveTextContent('Conflict: group search was changed by someone else');
    expect(screen.getByTestId('conflict-detail')).toHaveTextContent('the resource changed');
    const quota = screen.getByTestId('conflict-row-quotaBytes');
    expect(quota).toHaveAttribute('data-differs', 'true');
    expect(within(quota).getByTestId('conflict-current')).toHaveTextContent('50000 (48.8 KiB)');
    expect(within(quota).getByTestId('conflict-mine')).toHaveTextContent('40000 (39.1 KiB)');
    const soft = screen.getByTestId('conflict-row-waterLevels.softPercent');
    expect(within(soft).getByTestId('conflict-current')).toHaveTextContent('70');
    expect(within(soft).getByTestId('conflict-mine')).toHaveTextContent('80');
    expect(screen.getByTestId('conflict-row-eviction.policy')).toHaveAttribute('data-differs', 'false');
    // the two differing rows come first
    const rows = screen.getAllByRole('row').slice(1);
    expect(rows.slice(0, 2).map((r) => r.getAttribute('data-differs'))).toEqual(['true', 'true']);
    expect(screen.getByText(/2 fields differ/)).toBeInTheDocument();
  });

  it('re-applies or discards only when asked', async () => {
    const reapply = vi.fn();
    const discard = vi.fn();
    render(<ConflictView what="group g" rows={[{ field: 'quotaBytes', label: 'Quota (bytes)', current: '1', mine: '2' }]}
      onReapply={reapply} onDiscard={discard} />);
    expect(reapply).not.toHaveBeenCalled();
    await userEvent.click(screen.getByTestId('conflict-reapply'));
    expect(reapply).toHaveBeenCalledTimes(1);
    await userEvent.click(screen.getByTestId('conflict-discard'));
    expect(discard).toHaveBeenCalledTimes(1);
  });
});

describe('ConflictView with the values the user loaded', () => {
  it('marks only the fields someone else changed as current changes', () => {
    const loaded = { ...emptyGroupForm(), name: 'search', quotaBytes: '1000000000', softPercent: '70', storageCandidates: ['nfs_01'] };
    const mine = { ...loaded, softPercent: '60' };
    const now = { ...current, quotaBytes: 2_000_000_000, waterLevels: { softPercent: 70, hardPercent: 95 } };
    render(<ConflictView what="group search" rows={groupConflictRows(now, mine, loaded)} onReapply={() => {}} onDiscard={() => {}} />);
    const changed = screen.getAllByTestId('conflict-current');
    expect(changed).toHaveLength(1);
    expect(changed[0]).toHaveTextContent('2000000000 (1.86 GiB)');
    expect(changed[0]).toHaveTextContent('changed (was 1000000000 (954 MiB))');
    expect(screen.getByTestId('conflict-row-quotaBytes')).toHaveAttribute('data-changed', 'true');
    const soft = screen.getByTestId('conflict-row-waterLevels.softPercent');
    expect(soft).toHaveAttribute('data-changed', 'false');
    expect(soft).toHaveAttribute('data-differs', 'true');
    expect(within(soft).getByTestId('conflict-current-unchanged')).toHaveTextContent('70');
  });
});
