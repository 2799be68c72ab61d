/** Holding a transactional producer's commits, for tests of what happens while a transaction is still open. */
import type { Producer } from 'kafkajs';

/**
 * `p`, its transactions' commits made through `around`: it gets the real commit, to call when it
 * will (after a hold, around a failure). Returns `p`.
 */
export function aroundCommits(p: Producer, around: (commit: () => Promise<void>) => Promise<void>): Producer {
  const transaction = p.transaction.bind(p);
  p.transaction = async () => {
    const t = await transaction();
    const commit = t.commit.bind(t);
    t.commit = () => around(commit);
    return t;
  };
  return p;
}
