/**
 * kafkajs, loaded with three of its hot paths replaced, and its producer's send fixed so that a
 * broker lost mid-send loses no record (streams/kafkajs-send-messages.ts, tulios/kafkajs#1303). Every value import of kafkajs goes through
 * this module (an eslint rule holds the line), so the replacements are in place before kafkajs
 * loads its protocol modules, which capture them at load time.
 *
 * - Record-batch CRC-32C: kafkajs computes it in JavaScript, a table lookup per byte (4 % of a
 *   pipeline's CPU); `@node-rs/crc32` uses the CPU's CRC instruction.
 * - The default partitioner's murmur2 (Kafka's Java one, which co-partitioning relies on): kafkajs
 *   emulates its 32-bit arithmetic with a 64-bit Long object per step, 8 % of a replay's CPU and
 *   more of a plain produce. `murmur2` below is the same function on 32-bit integers
 *   (`Math.imul`); its test checks it against kafkajs' own.
 * - Its protocol `Encoder` allocates every buffer with `Buffer.alloc`: zero-filled and outside
 *   Node's pool, one per record and again each time it grows (7 % of a pipeline's CPU in a
 *   profile, before the garbage collection they cause). An encoder only ever hands out the
 *   bytes it wrote (`buffer` is `buf.slice(0, offset)`), so pooled, unfilled memory is safe.
 *
 * Measured A/B (the same benches, runs alternating with and without the replacements): `bench
 * replay` 6,168–6,300 → 7,050–7,997 turns/s, its outputs' plain produce 1.0–1.3 → 0.6–0.8 s;
 * `bench pipeline` 3,469–3,991 → 3,896–4,095 turns/s, within the noise; a plain produce of
 * 1 KB records under short keys, no difference. `bench replay` measures the floor on both.
 *
 * kafkajs 2.2.4 is its last release (the project is unmaintained), so these internals hold still;
 * `package.json` pins it, and `test/unit/streams/kafkajs.test.ts` checks each replacement took and
 * agrees with what it replaces.
 */
import { createRequire, Module } from 'node:module';
import type * as KafkaJs from 'kafkajs';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { createSendMessages } from './kafkajs-send-messages.ts';

const require = createRequire(import.meta.url);

/** The part of kafkajs' internal encoder that the replacement touches. */
interface EncoderState {
  buf: Buffer;
  offset: number;
  ensureAvailable(length: number): void;
}
interface EncoderClass {
  new (initialSize?: number): EncoderState;
  nextPowerOfTwo(value: number): number;
  prototype: EncoderState;
}

const paths = {
  kafkajs: require.resolve('kafkajs'),
  encoder: require.resolve('kafkajs/src/protocol/encoder.js'),
  crc32c: require.resolve('kafkajs/src/protocol/recordBatch/crc32C/index.js'),
  murmur2: require.resolve('kafkajs/src/producer/partitioners/default/murmur2.js'),
  sendMessages: require.resolve('kafkajs/src/producer/sendMessages.js'),
};

if (require.cache[paths.kafkajs] !== undefined)
  throw new TurnstreamError(ErrorCodes.INTERNAL, 'kafkajs was loaded before streams/kafkajs.ts: import kafkajs from there');

/** Puts `exports` in the module cache under `path`, as if that file had been loaded. */
function provide(path: string, exports: unknown): void {
  const module = new Module(path);
  module.filename = path;
  module.loaded = true;
  module.exports = exports;
  require.cache[path] = module;
}

const native = (() => {
  try {
    return (require('@node-rs/crc32') as typeof import('@node-rs/crc32')).crc32c;
  } catch {
    return undefined; // no binary for this platform: kafkajs keeps its own
  }
})();
/** CRC-32C of a record batch, unsigned, as kafkajs expects it. */
export const nativeCrc32c = native && ((buffer: Buffer): number => native(buffer) >>> 0);
if (nativeCrc32c) provide(paths.crc32c, nativeCrc32c);

const M = 0x5bd1e995;
/** Kafka's murmur2 (seed 0x9747b28c) of a key's bytes, a string's as UTF-8, as a signed 32-bit integer. */
export function murmur2(key: Buffer | string): number {
  const data = Buffer.isBuffer(key) ? key : Buffer.from(String(key));
  const length = data.length;
  let h = 0x9747b28c ^ length;
  const whole = length & ~3;
  for (let i = 0; i < whole; i += 4) {
    let k = data[i] | (data[i + 1] << 8) | (data[i + 2] << 16) | (data[i + 3] << 24);
    k = Math.imul(k, M);
    k ^= k >>> 24;
    h = Math.imul(h, M) ^ Math.imul(k, M);
  }
  switch (length & 3) {
    case 3:
      h ^= data[whole + 2] << 16;
    // falls through
    case 2:
      h ^= data[whole + 1] << 8;
    // falls through
    case 1:
      h = Math.imul(h ^ data[whole], M);
  }
  h = Math.imul(h ^ (h >>> 13), M);
  return h ^ (h >>> 15);
}
provide(paths.murmur2, murmur2);
provide(paths.sendMessages, createSendMessages);

const Encoder = require(paths.encoder) as EncoderClass;
Encoder.prototype.ensureAvailable = function ensureAvailable(this: EncoderState, length: number): void {
  if (this.offset + length <= this.buf.length) return;
  const grown = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(this.offset + length));
  this.buf.copy(grown, 0, 0, this.offset);
  this.buf = grown;
};
export class PooledEncoder extends Encoder {
  constructor(initialSize = 511) {
    // super(0) allocates one byte, small enough for V8 to keep on its heap.
    super(0);
    this.buf = Buffer.allocUnsafe(Encoder.nextPowerOfTwo(initialSize));
  }
}
require.cache[paths.encoder]!.exports = PooledEncoder;

const kafkajs = require('kafkajs') as typeof KafkaJs;

export default kafkajs;
export const { Kafka, logLevel, AssignerProtocol, Partitioners } = kafkajs;
export type Kafka = KafkaJs.Kafka;
export type logLevel = KafkaJs.logLevel;

/** What kafkajs' own modules now load for the CRC and the encoder (for the tests). */
export function kafkajsInternals(): { crc32c: unknown; murmur2: unknown; Encoder: unknown; sendMessages: unknown } {
  return {
    crc32c: require(paths.crc32c),
    murmur2: require(paths.murmur2),
    Encoder: require(paths.encoder),
    sendMessages: require(paths.sendMessages),
  };
}
