import type { BlockKeysResponse, BlockState } from '../api/types';

/** Position (in the blocks array) of the first block a reader would not get; -1 when every block is cached. */
export function firstMissIndex(blocks: BlockState[]): number {
  return blocks.findIndex((b) => !b.cached);
}

/** "N of M blocks cached; first miss at block k" (or why there is nothing to miss). */
export function promptMissSummary(r: BlockKeysResponse): string {
  const m = r.blocks.length;
  if (m === 0) {
    return `No full block: ${r.tokens} tokens are fewer than the block size of ${r.block_size}, so nothing is keyed.`;
  }
  const n = r.blocks.filter((b) => b.cached).length;
  const i = firstMissIndex(r.blocks);
  const tail = r.tokens_not_in_a_full_block > 0
    ? ` (${r.tokens_not_in_a_full_block} trailing tokens are not in a full block)` : '';
  if (i < 0) {
    return `${n} of ${m} blocks cached; no miss${tail}`;
  }
  return `${n} of ${m} blocks cached; first miss at block ${r.blocks[i].block}${tail}`;
}
