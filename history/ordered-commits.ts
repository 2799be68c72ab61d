/**
 * A replay's transactions, committed in order and one at a time, while the next batch is worked
 * on: a batch waits for the commit before it (and fails with it) before starting its own.
 */
export class OrderedCommits {
  private last: Promise<void> = Promise.resolve();

  /** Waits for the commit in flight (throwing its failure), then starts `commit`. */
  async next(commit: () => Promise<void>): Promise<void> {
    await this.last;
    this.last = commit();
    this.last.catch(() => undefined);
  }

  /** The last commit started: resolves once every commit has, rejects with a failure. */
  settled(): Promise<void> {
    return this.last;
  }
}
