import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { kafkajsInternals, murmur2, nativeCrc32c, PooledEncoder } from '../../../streams/kafkajs.ts';
import { createSendMessages } from '../../../streams/kafkajs-send-messages.ts';

const require = createRequire(import.meta.url);
/** A kafkajs module as kafkajs ships it, though the cache holds our replacement. */
function loadOriginal(id: string): unknown {
  const path = require.resolve(id);
  const ours = require.cache[path];
  delete require.cache[path];
  try {
    return require(path);
  } finally {
    require.cache[path] = ours;
  }
}
type Encoded = { buffer: Buffer };
const Record = require('kafkajs/src/protocol/recordBatch/record/v0/index.js') as (r: {
  offsetDelta: number;
  key: Buffer;
  value: Buffer;
}) => Encoded;
const { RecordBatch } = require('kafkajs/src/protocol/recordBatch/v0/index.js') as {
  RecordBatch: (b: { records: Encoded[]; firstTimestamp: number; maxTimestamp: number }) => Promise<Encoded>;
};
const decodeBatch = require('kafkajs/src/protocol/recordBatch/v0/decoder.js') as (
  d: unknown,
) => Promise<{ records: Array<{ key: Buffer; value: Buffer }> }>;
const Decoder = require('kafkajs/src/protocol/decoder.js') as new (b: Buffer) => unknown;
// kafkajs' own murmur2, which ours replaces (a copy of it under legacy/ is a different function).
const murmur2OfKafkajs = loadOriginal('kafkajs/src/producer/partitioners/default/murmur2.js') as (k: Buffer | string) => number;
// kafkajs' own CRC-32C in JavaScript, which the native one replaces.
const jsCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number;

test("kafkajs' own modules load the native CRC-32C, the 32-bit murmur2, the pooled encoder and the fixed send", () => {
  const { crc32c, murmur2: hash, Encoder, sendMessages } = kafkajsInternals();
  assert.equal(crc32c, nativeCrc32c);
  assert.equal(hash, murmur2);
  assert.equal(Encoder, PooledEncoder);
  assert.equal(sendMessages, createSendMessages);
});

test('the native CRC-32C gives the check value and agrees with the JavaScript one', () => {
  assert.ok(nativeCrc32c, '@node-rs/crc32 has a binary for this platform');
  assert.equal(nativeCrc32c(Buffer.from('123456789')), 0xe3069283);
  for (const size of [0, 1, 7, 8, 9, 63, 64, 1000, 70_000]) {
    const b = randomBytes(size);
    assert.equal(nativeCrc32c(b), jsCrc32c(b) >>> 0, `size ${size}`);
  }
});

test("murmur2 agrees with kafkajs' own on keys of every length mod 4, in several scripts, as strings and as bytes", () => {
  const keys = ['', 'a', 'ab', 'abc', 'abcd', '21', 'session-0', '0d7f3c2e-5b1a-4c8e-9f00-3a2b1c0d9e8f', 'ünïcödé', '会话', '🙂x'];
  for (let n = 0; n < 300; n++) keys.push(randomBytes(n % 70).toString(n % 2 ? 'base64' : 'latin1'));
  for (const key of keys) {
    assert.equal(murmur2(key), murmur2OfKafkajs(key), JSON.stringify(key));
    assert.equal(murmur2(Buffer.from(key)), murmur2OfKafkajs(Buffer.from(key)), JSON.stringify(key));
  }
  for (let n = 0; n < 200; n++) {
    const bytes = randomBytes(n);
    assert.equal(murmur2(bytes), murmur2OfKafkajs(bytes), bytes.toString('hex'));
  }
});

test('a record batch built on pooled memory holds only what was written: it decodes, its CRC checks, and it is the same each time', async () => {
  const records = [16, 511, 512, 3000, 0, 9000].map((size, i) => ({ key: Buffer.from(`key-${i}`), value: randomBytes(size) }));
  const encode = async () => {
    // Leave stale bytes in Node's buffer pool, where the encoder's memory now comes from.
    for (let i = 0; i < 64; i++) Buffer.allocUnsafe(512).fill(0xaa);
    const batch = records.map((r, offsetDelta) => Record({ offsetDelta, ...r }));
    return (await RecordBatch({ records: batch, firstTimestamp: 1_700_000_000_000, maxTimestamp: 1_700_000_000_000 })).buffer;
  };
  const bytes = await encode();
  assert.deepEqual(await encode(), bytes);

  const decoded = await decodeBatch(new Decoder(bytes));
  assert.deepEqual(
    decoded.records.map((r) => [r.key, r.value]),
    records.map((r) => [r.key, r.value]),
  );
  // firstOffset (8) · length (4) · partitionLeaderEpoch (4) · magic (1) · CRC (4) · what the CRC covers
  assert.equal(bytes.readUInt32BE(17), jsCrc32c(bytes.subarray(21)) >>> 0);
});

type Create = (context: unknown) => (o: object) => Promise<Array<{ partition: number }>>;

/**
 * A send of two partitions where broker 1 dies with the request for partition 0 in flight and
 * broker 2 answers for partition 1; the refreshed metadata then names broker 2 the leader of
 * partition 0 too. What each broker was asked to write, and what the send resolved with.
 */
const sendAcrossAFailover = (create: Create) => twoBrokerSend(create, { brokerOneDies: true });

/**
 * A transactional send of partition 0 (led by broker 1) and 1 (broker 2): broker 1's
 * AddPartitionsToTxn is refused once (CONCURRENT_TRANSACTIONS, as when the sends to several
 * leaders add their partitions at once) while broker 2's produce is still in flight.
 */
const sendWhileAnotherLeaderFails = (create: Create) => twoBrokerSend(create, { addPartitionsRefusedOnce: true });

async function twoBrokerSend(create: Create, fault: { brokerOneDies?: boolean; addPartitionsRefusedOnce?: boolean }) {
  const leaderOf0 = { now: 1 };
  const written: Array<{ node: number; partition: number }> = [];
  let refusals = fault.addPartitionsRefusedOnce ? 1 : 0;
  const broker = (node: number) => ({
    nodeId: node,
    async produce({ topicData }: { topicData: Array<{ topic: string; partitions: Array<{ partition: number }> }> }) {
      if (node === 1 && fault.brokerOneDies)
        throw Object.assign(new Error('Connection error: read ECONNRESET'), { name: 'KafkaJSConnectionError', retriable: true });
      if (node === 2 && fault.addPartitionsRefusedOnce) await new Promise((r) => setTimeout(r, 50));
      const partitions = topicData.flatMap((t) => t.partitions);
      for (const p of partitions) written.push({ node, partition: p.partition });
      return {
        topics: [{ topicName: 't', partitions: partitions.map((p) => ({ partition: p.partition, errorCode: 0, baseOffset: '0' })) }],
      };
    },
  });
  const brokers = new Map([
    ['1', broker(1)],
    ['2', broker(2)],
  ]);
  const metadata = () => [
    { partitionId: 0, leader: leaderOf0.now },
    { partitionId: 1, leader: 2 },
  ];
  const sequences = new Map<number, number>();
  const retry = require('kafkajs/src/retry/index.js') as (o: object) => unknown;
  const send = create({
    logger: { debug: () => undefined, error: () => undefined },
    cluster: {
      targetTopics: new Set(['t']),
      refreshMetadataIfNecessary: async () => undefined,
      refreshMetadata: async () => void (fault.brokerOneDies && (leaderOf0.now = 2)),
      findTopicPartitionMetadata: metadata,
      findLeaderForPartitions: (_: string, partitions: Array<number | string>) => {
        const out: Record<string, number[]> = {};
        for (const p of partitions.map(Number)) (out[metadata()[p].leader] ??= []).push(p);
        return out;
      },
      findBroker: async ({ nodeId }: { nodeId: string }) => brokers.get(String(nodeId)),
      addMultipleTargetTopics: async () => undefined,
      removeBroker: () => undefined,
      isConnected: () => true,
      connect: async () => undefined,
    },
    partitioner: ({ message }: { message: { partition: number } }) => message.partition,
    eosManager: {
      isTransactional: () => Boolean(fault.addPartitionsRefusedOnce),
      getProducerId: () => 1,
      getProducerEpoch: () => 0,
      getTransactionalId: () => undefined,
      getSequence: (_: string, p: number) => sequences.get(p) ?? 0,
      updateSequence: (_: string, p: number, n: number) => void sequences.set(p, (sequences.get(p) ?? 0) + n),
      acquireBrokerLock: async () => undefined,
      releaseBrokerLock: async () => undefined,
      addPartitionsToTransaction: async (topicData: Array<{ partitions: Array<{ partition: number }> }>) => {
        if (refusals > 0 && topicData[0]!.partitions[0]!.partition === 0) {
          refusals--;
          throw Object.assign(
            new Error(
              'The producer attempted to update a transaction while another concurrent operation on the same transaction was ongoing',
            ),
            {
              name: 'KafkaJSProtocolError',
              type: 'CONCURRENT_TRANSACTIONS',
              retriable: true,
            },
          );
        }
      },
    },
    retrier: retry({ retries: 3, initialRetryTime: 1, maxRetryTime: 5 }),
  });
  const result = await send({
    acks: -1,
    timeout: 1000,
    topicMessages: [
      {
        topic: 't',
        messages: [
          { partition: 0, value: 'a' },
          { partition: 1, value: 'b' },
        ],
      },
    ],
  });
  return { written, resolved: result.map((r) => r.partition).sort(), sequences: Object.fromEntries(sequences) };
}

test("kafkajs' own send resolves without the records of a partition that moved to a broker that had answered (#1303); the fixed one sends them there", async () => {
  const stock = loadOriginal('kafkajs/src/producer/sendMessages.js') as (
    context: unknown,
  ) => (o: object) => Promise<Array<{ partition: number }>>;
  const lost = await sendAcrossAFailover(stock);
  assert.deepEqual(lost.written, [{ node: 2, partition: 1 }], 'kafkajs never sends partition 0 again');
  assert.deepEqual(lost.resolved, [1], '… and resolves anyway');

  const fixed = await sendAcrossAFailover(createSendMessages as never);
  assert.deepEqual(fixed.written, [
    { node: 2, partition: 1 },
    { node: 2, partition: 0 },
  ]);
  assert.deepEqual(fixed.resolved, [0, 1]);
  // The failed request's sequence numbers were given back: each partition's record is sequence 0, once.
  assert.deepEqual(fixed.sequences, { 0: 1, 1: 1 });
});

test('a send to several leaders retries only once every leader answered: a produce still in flight is not sent twice in the transaction', async () => {
  // Seen on three brokers (chaos --cluster): broker 1's AddPartitionsToTxn refused, the retry began
  // while broker 2's produce was in flight, and sent partition 1's records again with the next
  // sequence numbers; the transaction committed both copies.
  const r = await sendWhileAnotherLeaderFails(createSendMessages as never);
  assert.deepEqual(
    r.written.sort((a, b) => a.partition - b.partition),
    [
      { node: 1, partition: 0 },
      { node: 2, partition: 1 },
    ],
    'each partition written once',
  );
  assert.deepEqual(r.resolved, [0, 1]);
  assert.deepEqual(r.sequences, { 0: 1, 1: 1 });
});
