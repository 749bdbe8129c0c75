import { describe, expect, it } from 'vitest';
import { render, screen, waitFor, within } from '@testing-library/react';
import userEvent from '@testing-library/user-event';
import { PromptMissResult, PromptMissTool } from './PromptMiss';
import { firstMissIndex, promptMissSummary } from '../lib/promptMiss';
import type { BlockKeysResponse } from '../api/types';
import { json, signInAs, stubFetch } from '../testing/utils';

const result: BlockKeysResponse = {
  instance_id: 'i1', hash_scheme: 'kvcm', block_size: 4, tokens: 18, tokens_not_in_a_full_block: 2, prefix_hit_blocks: 2,
  blocks: [
    { block: 0, key: '-123', hex: 'ff85', status: 'CLS_SERVING', cached: true },
    { block: 1, key: '456', hex: '01c8', status: 'CLS_SERVING', cached: true },
    { block: 2, key: '789', hex: '0315', status: 'CLS_NOT_FOUND', cached: false },
    { block: 3, key: '1011', hex: '03f3', status: 'CLS_SERVING', cached: true },
  ],
};

describe('prompt-miss result', () => {
  it('marks the first block that is not cached', () => {
    render(<PromptMissResult result={result} />);
    const miss = screen.getByTestId('first-miss');
    expect(miss).toHaveAttribute('data-block', '2');
    expect(miss).toHaveAttribute('data-cached', 'false');
    expect(within(miss).getByText('789')).toBeInTheDocument();
    // the block cell holds the block number alone
    expect(within(miss).getAllByRole('cell')[0]).toHaveTextContent(/^2$/);
    expect(screen.getAllByTestId('first-miss')).toHaveLength(1);
    expect(screen.getByTestId('block-row-3')).toHaveAttribute('data-cached', 'true');
    expect(screen.getByTestId('prompt-miss-summary')).toHaveTextContent('3 of 4 blocks cached; first miss at block 2');
  });

  it('marks nothing when every block is cached, and explains a prompt shorter than a block', () => {
    const all = { ...result, blocks: result.blocks.map((b) => ({ ...b, cached: true })) };
    render(<PromptMissResult result={all} />);
    expect(screen.queryByTestId('first-miss')).toBeNull();
    expect(firstMissIndex(all.blocks)).toBe(-1);
    expect(promptMissSummary(all)).toMatch(/^4 of 4 blocks cached; no miss/);
    expect(promptMissSummary({ ...result, tokens: 3, blocks: [] })).toMatch(/No full block: 3 tokens/);
  });

  it('sends the parsed token ids and shows the answer', async () => {
    signInAs('tenant', ['g']);
    const calls = stubFetch({ 'POST /api/v1/meta/instances/i1/block-keys': () => json(result) });
    render(<PromptMissTool instanceId="i1" />);
    await userEvent.click(screen.getByLabelText(/Token ids/, { selector: 'textarea' }));
    await userEvent.paste('[1,2,3,4, 5,6,7,8]');
    await userEvent.click(screen.getByTestId('prompt-miss-run'));
    await waitFor(() => expect(screen.getByTestId('first-miss')).toBeInTheDocument());
    expect(JSON.parse(calls[0].body!)).toEqual({ token_ids: [1, 2, 3, 4, 5, 6, 7, 8] });
  });

  it('refuses bad token ids without calling the server', async () => {
    const calls = stubFetch({});
    render(<PromptMissTool instanceId="i1" />);
    await userEvent.type(screen.getByLabelText(/Token ids/, { selector: 'textarea' }), '1, two, 3');
    await userEvent.click(screen.getByTestId('prompt-miss-run'));
    expect(await screen.findByTestId('field-error')).toHaveTextContent(/token 2/);
    expect(calls).toHaveLength(0);
  });
});
