import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { kafkajsInternals, murmur2, nativeCrc32c, PooledEncoder } from '../../../streams/kafkajs.ts';

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

test("kafkajs' own modules load the native CRC-32C, the 32-bit murmur2 and the pooled encoder", () => {
  const { crc32c, murmur2: hash, Encoder } = kafkajsInternals();
  assert.equal(crc32c, nativeCrc32c);
  assert.equal(hash, murmur2);
  assert.equal(Encoder, PooledEncoder);
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
