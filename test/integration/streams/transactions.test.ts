/**
 * The retrying transactional path (streams/transactions.ts) that the processors and the learner
 * share, on the real broker: Kafka's CONCURRENT_TRANSACTIONS, provoked by a transaction that
 * touches many partitions followed at once by the next one, is waited out; and a commit made
 * while Kafka is unreachable lands once it is back, exactly once.
 */
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';
import type { Kafka } from 'kafkajs';
import { createKafka, readToEnd } from '../../../streams/index.ts';
import { createLogger, metricsRegistry } from '../../../core/index.ts';
import { Transactions } from '../../../streams/transactions.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';
import { TcpProxy } from '../gateway/tcp-proxy.ts';
import { waitFor } from '../../support/wait-for.ts';

let kafka: Kafka;
let stack: Awaited<ReturnType<typeof ensureStack>>;
const logger = createLogger('transactions-test', 'error');

async function topics(prefix: string, specs: Array<[string, number]>): Promise<void> {
  const admin = kafka.admin();
  await admin.connect();
  await admin.createTopics({
    waitForLeaders: true,
    topics: specs.map(([t, n]) => ({ topic: `${prefix}${t}`, numPartitions: n, replicationFactor: 1 })),
  });
  await admin.disconnect();
}

async function committed(groupId: string, topic: string): Promise<string | undefined> {
  const admin = kafka.admin();
  await admin.connect();
  try {
    const [res] = await admin.fetchOffsets({ groupId, topics: [topic] });
    return res.partitions.find((p) => p.partition === 0)?.offset;
  } finally {
    await admin.disconnect();
  }
}

/**
 * Records of `topic`, read_committed up to its end. Called once every transaction that writes
 * the topic has finished, so the count is final: an extra copy would be in it, with no waiting.
 */
async function count(k: Kafka, topic: string): Promise<number> {
  return readToEnd(k, topic, () => undefined);
}

/** Transaction attempts retried so far in this process: for `reason`, or for any. */
async function retriesSoFar(reason?: string): Promise<number> {
  const m = (await metricsRegistry.getSingleMetric('turnstream_transaction_retries_total')?.get())?.values ?? [];
  return m.filter((v) => reason === undefined || v.labels.reason === reason).reduce((a, v) => a + v.value, 0);
}

describe('transactions: the retrying path of processors and learner (real Kafka)', { timeout: 300_000 }, () => {
  before(async () => {
    stack = await ensureStack();
    kafka = createKafka({ brokers: [stack.brokers], clientId: 'transactions-test', logger });
  });

  it('CONCURRENT_TRANSACTIONS (51) is retried: back-to-back transactions all commit, each once', async () => {
    const prefix = uniquePrefix('txn-concurrent');
    await topics(prefix, [
      ['wide', 60],
      ['in', 1],
    ]);
    // Leaders of 60 fresh partitions take a moment to be known everywhere.
    await waitFor('a leader for each of the 60 partitions', async () => {
      const admin = kafka.admin();
      await admin.connect();
      try {
        const [t] = (await admin.fetchTopicMetadata({ topics: [`${prefix}wide`] })).topics;
        return t.partitions.length === 60 && t.partitions.every((p) => p.leader >= 0);
      } finally {
        await admin.disconnect();
      }
    });
    const tx = new Transactions({ kafka, transactionalId: `${prefix}tx`, logger, retryBaseMs: 20 });
    await tx.connect();
    const before = await retriesSoFar('CONCURRENT_TRANSACTIONS');
    let rounds = 0;
    // A transaction over many partitions takes the coordinator a while to finish; the next one,
    // started at once, meets CONCURRENT_TRANSACTIONS. Go on until it happened a few times.
    while (rounds < 60 && (await retriesSoFar('CONCURRENT_TRANSACTIONS')) - before < 3) {
      const wide = Array.from({ length: 60 }, (_, k) => ({ topic: `${prefix}wide`, key: `k${rounds}-${k}`, value: Buffer.from('w') }));
      assert.ok(await tx.commit(() => ({ outputs: wide })));
      const offsets = {
        groupId: `${prefix}g`,
        topics: [{ topic: `${prefix}in`, partitions: [{ partition: 0, offset: String(rounds + 1) }] }],
      };
      assert.ok(await tx.commit(() => ({ outputs: [], offsets })));
      rounds++;
    }
    await tx.disconnect();
    const seen = (await retriesSoFar('CONCURRENT_TRANSACTIONS')) - before;
    assert.ok(seen >= 1, `the broker answered CONCURRENT_TRANSACTIONS ${seen} times in ${rounds} rounds, and each was retried`);
    assert.equal(await committed(`${prefix}g`, `${prefix}in`), String(rounds), 'every offset commit landed');
    assert.equal(await count(kafka, `${prefix}wide`), rounds * 60, 'every output once');
  });

  it('awaitVisible: once it returns, a read_committed reader that starts then sees every committed output', async () => {
    const prefix = uniquePrefix('txn-visible');
    await topics(prefix, [['out', 4]]);
    const tx = new Transactions({ kafka, transactionalId: `${prefix}tx`, logger });
    await tx.connect();
    await tx.awaitVisible(); // nothing written yet: returns at once
    let sent = 0;
    for (let round = 0; round < 20; round++) {
      const outputs = Array.from({ length: 25 }, (_, k) => ({ topic: `${prefix}out`, key: `k${round}-${k}`, value: Buffer.from('v') }));
      assert.ok(await tx.commit(() => ({ outputs })));
      sent += outputs.length;
      await tx.awaitVisible();
      // The reader takes the end it sees when it starts (the last stable offset): past all of it.
      if (round % 5 === 4) assert.equal(await readToEnd(kafka, `${prefix}out`, () => undefined), sent);
    }
    await tx.disconnect();
  });

  describe('with Kafka cut', () => {
    let proxy: TcpProxy;
    before(async () => {
      const [host, port] = stack.brokers.split(',')[0].split(':');
      proxy = new TcpProxy(host, Number(port));
      await proxy.start();
    });
    after(async () => {
      await proxy.stop();
    });

    it('a commit made while Kafka is unreachable is retried until it is back, then lands exactly once', async () => {
      const prefix = uniquePrefix('txn-outage');
      await topics(prefix, [
        ['out', 2],
        ['in', 1],
      ]);
      const tx = new Transactions({
        kafka: proxy.kafka('txn-outage'),
        transactionalId: `${prefix}tx`,
        logger,
        retryBaseMs: 100,
        retryMaxMs: 1000,
      });
      await tx.connect();
      const content = (i: number) => ({
        outputs: [{ topic: `${prefix}out`, key: `k${i}`, value: Buffer.from(`v${i}`) }],
        offsets: { groupId: `${prefix}g`, topics: [{ topic: `${prefix}in`, partitions: [{ partition: 0, offset: String(i) }] }] },
      });
      assert.ok(await tx.commit(() => content(1)));
      await proxy.stop();
      const before = await retriesSoFar();
      let landed = false;
      const pending = tx.commit(() => content(2)).then((c) => (landed = c !== null));
      // Three failed attempts, each retried, and nothing landed: it goes on trying while Kafka is away.
      await waitFor('three retries of the commit (or it landing)', async () => landed || (await retriesSoFar()) - before >= 3, {
        timeoutMs: 60_000,
        intervalMs: 100,
      });
      assert.equal(landed, false, 'still retrying while Kafka is away');
      await proxy.start();
      await pending;
      assert.equal(landed, true);
      await tx.disconnect();
      assert.equal(await committed(`${prefix}g`, `${prefix}in`), '2');
      assert.equal(await count(kafka, `${prefix}out`), 2, 'each output once');
    });
  });
});
