// The @platformatic/kafka side of `turnstream bench clients`, one run per process:
//   node peer.mjs read|pass BROKERS FROM COUNT GROUP [TO]
// read: reads COUNT records of FROM from the beginning; pass: also produces each fetched chunk to
// TO (acks=all, idempotent, at least once), as bench/support.ts's rawPassthrough does with kafkajs.
// Both are timed from the first record to the COUNT-th and print one JSON line.

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
  mode === 'pass' ? new Producer({ clientId: 'bench-clients-peer', bootstrapBrokers, idempotent: true, acks: -1 }) : undefined;
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
      const chunk = pending.splice(0, CHUNK);
      stream.pause();
      await producer.send({ messages: chunk.map((m) => ({ topic: to, key: m.key, value: m.value })) });
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
    setImmediate(() => drain().catch(reject));
  });
});
const seconds = (performance.now() - t0) / 1000;
process.stdout.write(`${JSON.stringify({ mode, records: seen, seconds, msgs_per_s: Math.round(seen / seconds) })}\n`);
await stream.close();
await consumer.close(true);
await producer?.close();
process.exit(0);
