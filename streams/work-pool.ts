/**
 * A bounded async pool in which tasks with the same key run one after the other, in
 * arrival order, and tasks with different keys run concurrently. A task weighs what it holds
 * (one record, or a batch's records), and the bound is on the weights.
 */
export class KeyedWorkPool {
  readonly concurrency: number;
  private inFlightCount = 0;
  private readonly tails = new Map<string, Promise<void>>();
  private readonly waiters: Array<() => void> = [];

  /** @param concurrency the weight admitted before `full` is true. */
  constructor(concurrency: number) {
    if (!(concurrency >= 1)) throw new Error('concurrency must be >= 1');
    this.concurrency = concurrency;
  }

  /** The weight of the tasks admitted and not finished (running or waiting for their key). */
  get inFlight(): number {
    return this.inFlightCount;
  }

  get full(): boolean {
    return this.inFlightCount >= this.concurrency;
  }

  /** Admits a task; it starts once the previous task with the same key has finished. */
  submit(key: string, task: () => Promise<void>, weight = 1): Promise<void> {
    this.inFlightCount += weight;
    const prev = this.tails.get(key) ?? Promise.resolve();
    const run = prev.then(task);
    // A failed task must not stop its key's successors; the caller handles its own errors.
    const tail: Promise<void> = run
      .then(
        () => undefined,
        () => undefined,
      )
      .finally(() => {
        this.inFlightCount -= weight;
        if (this.tails.get(key) === tail) this.tails.delete(key);
        if (this.inFlightCount < this.concurrency) this.waiters.splice(0).forEach((w) => w());
      });
    this.tails.set(key, tail);
    return run;
  }

  /** Resolves when a slot is free. */
  whenNotFull(): Promise<void> {
    if (!this.full) return Promise.resolve();
    return new Promise((resolve) => this.waiters.push(resolve));
  }

  /** Resolves when nothing is in flight. */
  async drain(): Promise<void> {
    while (this.tails.size > 0) await Promise.allSettled([...this.tails.values()]);
  }
}
