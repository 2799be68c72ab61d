/**
 * The instances of one counting-processor group (test/support/counting-processor.ts) in this
 * process, as bench/chaos/partition-moves.ts drives them: each with a Kafka client of its own,
 * through which its commits can be held. A held instance has a transaction open, its outputs and
 * offsets sent, and waits before it commits; its consumer goes on heartbeating and rejoining, so
 * its partitions move as they would from a slow or stalled owner.
 */
import type { Kafka } from 'kafkajs';
import type { GroupMembers } from '../../bench/chaos/partition-moves.ts';
import { createKafka, type EventCodecs, type ProcessorHandle } from '../../streams/index.ts';
import { aroundCommits } from './around-commits.ts';
import { startCountingProcessor } from './counting-processor.ts';

interface Hold {
  /** Resolved when a commit reached the hold. */
  reached: Promise<void>;
  reach: () => void;
  /** Lets the held commit go on. */
  release: () => void;
  released: Promise<void>;
  /** The held commit's outcome, once it went on. */
  done: Promise<unknown>;
  finish: (outcome: unknown) => void;
}

function hold(): Hold {
  const h = {} as Hold;
  h.reached = new Promise((r) => (h.reach = r));
  h.released = new Promise((r) => (h.release = r));
  h.done = new Promise((r) => (h.finish = r));
  return h;
}

/** A Kafka client whose transactions' commits wait while `holding()` returns a hold. */
function holdingKafka(kafka: Kafka, holding: () => Hold | undefined): Kafka {
  return new Proxy(kafka, {
    get(target, prop, receiver) {
      if (prop !== 'producer') return Reflect.get(target, prop, receiver) as unknown;
      return (config: Parameters<Kafka['producer']>[0]) =>
        aroundCommits(target.producer(config), async (commit) => {
          const h = holding();
          if (!h) return commit();
          h.reach();
          await h.released;
          try {
            await commit();
            h.finish('committed');
          } catch (err) {
            h.finish(err);
            throw err;
          }
        });
    },
  });
}

export interface InProcessMembers extends GroupMembers {
  handles: Map<string, ProcessorHandle>;
  /** What the held commit of `id` came to once resumed: 'committed' or its error. */
  heldOutcome(id: string): Promise<unknown>;
}

export interface InProcessMembersOptions {
  brokers: string;
  codecs: EventCodecs;
  groupId: string;
  /** @default 6000 */
  sessionTimeoutMs?: number;
  /** The Kafka client id of instance `id` (member ids sort by it, and the co-partitioned assignor hands partitions out in that order). @default `member-${id}` */
  clientIdOf?: (id: string) => string;
}

export function inProcessMembers(o: InProcessMembersOptions): InProcessMembers {
  const handles = new Map<string, ProcessorHandle>();
  const holds = new Map<string, Hold>();
  const held = new Map<string, Hold>();
  return {
    handles,
    async start(id) {
      const kafka = holdingKafka(createKafka({ brokers: [o.brokers], clientId: o.clientIdOf?.(id) ?? `member-${id}` }), () =>
        holds.get(id),
      );
      const h = await startCountingProcessor({
        kafka,
        codecs: o.codecs,
        groupId: o.groupId,
        instanceId: id,
        sessionTimeoutMs: o.sessionTimeoutMs ?? 6000,
      });
      handles.set(id, h);
      await h.ready;
    },
    async stop(id) {
      holds.get(id)?.release();
      await handles.get(id)?.stop();
      handles.delete(id);
    },
    async stall(id) {
      const h = hold();
      holds.set(id, h);
      await h.reached;
      // Only the one commit is held: the instance's next transactions, if any, go on.
      holds.delete(id);
      held.set(id, h);
    },
    async resume(id) {
      const h = held.get(id);
      if (!h) return;
      h.release();
      await h.done;
    },
    heldOutcome: (id) => held.get(id)?.done ?? Promise.resolve(undefined),
  };
}
