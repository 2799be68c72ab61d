/**
 * Partition moves of one processor group under steady input: the group scaled through a list of
 * sizes (1 → 3 → 1), and a partition taken from an instance whose transaction is open (its
 * outputs produced, its commit not yet done), which then tries to commit. What a move can do
 * wrong shows in the outputs counted by input id: an input handled by both owners (doubled) or by
 * neither (lost).
 *
 * They drive a {@link GroupMembers}: the runtime's integration test
 * (test/integration/streams/partition-move.test.ts) gives in-process instances, whose commit it
 * holds; `chaos --cluster` (cluster.ts) gives supervised processes, which a SIGSTOP holds.
 */

/** The instances of one consumer group, started, stopped and held by id. */
export interface GroupMembers {
  /** Starts instance `id`; resolves once it has joined the group. */
  start(id: string): Promise<void>;
  /** Stops instance `id` cleanly (it commits what it finished and leaves the group). */
  stop(id: string): Promise<void>;
  /**
   * Holds instance `id` with a transaction open: resolves once its outputs and offsets are sent
   * and its commit is held (or, for a process, once it is stopped mid-stream).
   */
  stall(id: string): Promise<void>;
  /** Lets a held instance go on: it tries to commit the transaction it held. */
  resume(id: string): Promise<void>;
}

/** When a step of a scenario is over; each resolves once the group is there. */
export interface MoveWaits {
  /** Every input so far is handled by the group (committed): the step settled. */
  settled(): Promise<void>;
  /** The partitions of a held instance are owned, and their records handled, by the others. */
  taken(): Promise<void>;
}

/** The counts of a run, by input id. */
export interface MoveCounts {
  inputs: number;
  /** Inputs with no output. */
  lost: number;
  /** Outputs beyond one per input. */
  doubled: number;
  /** Outputs whose id is no input's. */
  extra: number;
}

/** Counts `outputIds` (one per input expected) against `inputIds`. */
export function countByInput(inputIds: Iterable<string>, outputIds: Iterable<string>): MoveCounts {
  const seen = new Map<string, number>();
  for (const id of outputIds) seen.set(id, (seen.get(id) ?? 0) + 1);
  const inputs = new Set(inputIds);
  let lost = 0;
  let doubled = 0;
  for (const id of inputs) {
    const n = seen.get(id) ?? 0;
    if (n === 0) lost++;
    else doubled += n - 1;
  }
  const extra = [...seen.keys()].filter((id) => !inputs.has(id)).length;
  return { inputs: inputs.size, lost, doubled, extra };
}

/**
 * Scales the group through `sizes` (instances `i0`, `i1`, …: growing starts the next ones,
 * shrinking stops the newest), waiting after each step until it settled. `from` names the
 * instances already running. The last step's instances are left running; their ids are returned
 * with the steps.
 */
export async function scaleGroup(
  members: GroupMembers,
  waits: MoveWaits,
  sizes: number[],
  say: (l: string) => void = () => undefined,
  from: readonly string[] = [],
) {
  const running: string[] = [...from];
  const steps: Array<{ instances: number; seconds: number }> = [];
  for (const size of sizes) {
    const t0 = Date.now();
    while (running.length < size) {
      const id = `i${running.length}`;
      await members.start(id);
      running.push(id);
    }
    while (running.length > size) await members.stop(running.pop()!);
    await waits.settled();
    steps.push({ instances: size, seconds: (Date.now() - t0) / 1000 });
    say(`  ${size} instance${size === 1 ? '' : 's'}: settled in ${steps.at(-1)!.seconds.toFixed(1)} s`);
  }
  return { steps, running };
}

/**
 * Instance `a` alone, held with a transaction open; `b` joins and takes its partitions and
 * handles their records; then `a` is let go and tries to commit what it held.
 */
export async function moveMidTransaction(members: GroupMembers, waits: MoveWaits, say: (l: string) => void = () => undefined) {
  await members.start('a');
  await members.stall('a');
  say('  a holds a transaction open; b joins');
  const t0 = Date.now();
  await members.start('b');
  await waits.taken();
  const takenS = (Date.now() - t0) / 1000;
  say(`  b took a's partitions and handled their records in ${takenS.toFixed(1)} s; a tries to commit`);
  await members.resume('a');
  await waits.settled();
  await members.stop('b');
  await members.stop('a');
  return { taken_s: takenS };
}
