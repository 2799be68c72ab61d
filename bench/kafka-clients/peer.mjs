// The @platformatic/kafka side of `turnstream bench clients`, one run per process:
//   node peer.mjs read|pass|eos BROKERS FROM COUNT GROUP [TO]
// read: reads COUNT records of FROM from the beginning; pass: also produces each fetched chunk to
// TO (acks=all, idempotent, at least once), as bench/support.ts's rawPassthrough does with kafkajs;
// eos: exactly once, what arrived since the last commit produced to TO in one transaction with
// its offsets, which carry the group's generation and member id (KIP-447's TxnOffsetCommit), as
// bench/eos-passthrough.ts does with kafkajs. Each is timed from the first record to the COUNT-th
// (committed, for eos) and prints one JSON line.

// The client declares Node >= 22; on Node 20 it lacks only this (ES2024) for the paths used here.
Promise.withResolvers ??= function withResolvers() {
  let resolve;
  let reject;
  const promise = new Promise((a, b) => {
    resolve = a;
    reject = b;
  });
  return { promise, resolve, reject };
};

const { Consumer, Producer } = await import('@platformatic/kafka');
const [mode, brokers, from, countArg, groupId, to] = process.argv.slice(2);
const count = Number(countArg);
const bootstrapBrokers = brokers.split(',');
// The most a produce request carries: a broker refuses a request over its message.max.bytes.
const CHUNK = 800;

const consumer = new Consumer({ groupId, clientId: 'bench-clients-peer', bootstrapBrokers, maxWaitTime: 20 });
const stream = await consumer.consume({ topics: [from], mode: 'earliest', autocommit: false, maxWaitTime: 20 });
const producer =
  mode === 'pass' || mode === 'eos'
    ? new Producer({
        clientId: 'bench-clients-peer',
        bootstrapBrokers,
        idempotent: true,
        acks: -1,
        ...(mode === 'eos' ? { transactionalId: `${groupId}.0` } : {}),
      })
    : undefined;
let transactions = 0;
/** One transaction: `chunk` produced to TO, and the offset of the last record of each partition. */
const commitChunk = async (chunk) => {
  const tx = await producer.beginTransaction();
  await tx.addConsumer(consumer);
  for (let i = 0; i < chunk.length; i += CHUNK)
    await tx.send({ messages: chunk.slice(i, i + CHUNK).map((m) => ({ topic: to, key: m.key, value: m.value })) });
  const last = new Map();
  for (const m of chunk) last.set(m.partition, m);
  for (const m of last.values()) await tx.addOffset(m);
  await tx.commit();
  transactions++;
};
let t0 = 0;
let seen = 0;
await new Promise((resolve, reject) => {
  stream.once('error', reject);
  if (!producer) {
    stream.on('data', () => {
      t0 ||= performance.now();
      if (++seen === count) resolve();
    });
    return;
  }
  const pending = [];
  let draining = false;
  const drain = async () => {
    while (pending.length > 0) {
      // At least once: a produce request at a time. Exactly once: what arrived, up to 4000 records (the runtime's bound), per transaction.
      const chunk = pending.splice(0, mode === 'eos' ? 4000 : CHUNK);
      stream.pause();
      if (mode === 'eos') await commitChunk(chunk);
      else await producer.send({ messages: chunk.map((m) => ({ topic: to, key: m.key, value: m.value })) });
      stream.resume();
      seen += chunk.length;
      if (seen >= count) return resolve();
    }
    draining = false;
  };
  stream.on('data', (m) => {
    t0 ||= performance.now();
    pending.push(m);
    if (draining) return;
    draining = true;
    // Exactly once, as the runtime: what finished waits 20 ms (its commit interval) to share a transaction.
    setTimeout(() => drain().catch(reject), mode === 'eos' ? 20 : 0);
  });
});
const seconds = (performance.now() - t0) / 1000;
process.stdout.write(`${JSON.stringify({ mode, records: seen, seconds, msgs_per_s: Math.round(seen / seconds), transactions })}\n`);
await stream.close();
await consumer.close(true);
await producer?.close();
process.exit(0);
