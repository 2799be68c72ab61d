import assert from 'node:assert/strict';
import { createRequire } from 'node:module';
import { randomBytes } from 'node:crypto';
import { test } from 'node:test';
import { kafkajsInternals, nativeCrc32c, PooledEncoder } from '../../../streams/kafkajs.ts';

const require = createRequire(import.meta.url);
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
// kafkajs' own CRC-32C in JavaScript, which the native one replaces.
const jsCrc32c = require('kafkajs/src/protocol/recordBatch/crc32C/crc32C.js') as (b: Buffer) => number;

test("kafkajs' own modules load the native CRC-32C and the pooled encoder", () => {
  const { crc32c, Encoder } = kafkajsInternals();
  assert.equal(crc32c, nativeCrc32c);
  assert.equal(Encoder, PooledEncoder);
});

test('the native CRC-32C gives the check value and agrees with the JavaScript one', () => {
  assert.equal(nativeCrc32c(Buffer.from('123456789')), 0xe3069283);
  for (const size of [0, 1, 7, 8, 9, 63, 64, 1000, 70_000]) {
    const b = randomBytes(size);
    assert.equal(nativeCrc32c(b), jsCrc32c(b) >>> 0, `size ${size}`);
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
