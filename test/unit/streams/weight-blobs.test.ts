/**
 * A version's files in pieces and back: every piece and file sha256-checked, pieces in any order,
 * and each kind of damage refused with an error that names the piece or file.
 */
import assert from 'node:assert/strict';
import { randomBytes } from 'node:crypto';
import { describe, it } from 'node:test';
import { ErrorCodes, TurnstreamError } from '../../../core/index.ts';
import {
  assembleChunks,
  chunkFiles,
  parseWeightBlobUri,
  weightBlobUri,
  weightChunkKey,
  WEIGHT_CHUNK_BYTES,
} from '../../../streams/index.ts';
import { avroTypeOf } from '../../../schemas/index.ts';

const adapter = randomBytes(WEIGHT_CHUNK_BYTES * 2 + 1000);
const manifest = Buffer.from('{"format":"gguf-lora-v1"}\n');
const files = [
  { name: 'adapter.gguf', data: adapter },
  { name: 'adapter.json', data: manifest },
];

const refused = (fn: () => unknown, code: string, message: RegExp): void => {
  assert.throws(fn, (err: unknown) => {
    assert.ok(err instanceof TurnstreamError, String(err));
    assert.equal(err.code, code);
    assert.match(err.message, message);
    return true;
  });
};

describe('weight blobs', () => {
  it('cuts files into pieces of at most the chunk size, numbered across files, and puts them back in any order', () => {
    const chunks = chunkFiles('smollm2-135m', 7, files);
    assert.deepEqual(
      chunks.map((c) => [c.index, c.count, c.file, c.fileOffset, c.data.length]),
      [
        [0, 4, 'adapter.gguf', 0, WEIGHT_CHUNK_BYTES],
        [1, 4, 'adapter.gguf', WEIGHT_CHUNK_BYTES, WEIGHT_CHUNK_BYTES],
        [2, 4, 'adapter.gguf', 2 * WEIGHT_CHUNK_BYTES, 1000],
        [3, 4, 'adapter.json', 0, manifest.length],
      ],
    );
    const back = assembleChunks('smollm2-135m', 7, [...chunks].reverse());
    assert.deepEqual(back, files);
  });

  it('a piece round-trips through its Avro schema and stays under the topic limit', () => {
    const [c] = chunkFiles('m', 1, files);
    const type = avroTypeOf('weightBlobs');
    const bytes = type.toBuffer(c);
    assert.ok(bytes.length < (1024 * 1024) / 3, `${bytes.length} bytes`);
    assert.deepEqual({ ...type.fromBuffer(bytes) }, c);
  });

  it('an empty file is one empty piece, and comes back', () => {
    const chunks = chunkFiles('m', 1, [{ name: 'empty.bin', data: Buffer.alloc(0) }]);
    assert.equal(chunks.length, 1);
    assert.deepEqual(assembleChunks('m', 1, chunks), [{ name: 'empty.bin', data: Buffer.alloc(0) }]);
  });

  it('refuses a piece whose bytes do not match its sha256, naming it', () => {
    const chunks = chunkFiles('m', 3, files);
    const bad = Buffer.from(chunks[1].data);
    bad[10] ^= 0xff;
    chunks[1] = { ...chunks[1], data: bad };
    refused(
      () => assembleChunks('m', 3, chunks),
      ErrorCodes.CORRUPT_WEIGHTS,
      /piece 1 of m v3 \(adapter\.gguf at byte 262144\) has sha256 [0-9a-f]{64}, its record says/,
    );
  });

  it('refuses a file whose pieces check out but whose whole does not (a piece of another attempt)', () => {
    const chunks = chunkFiles('m', 3, files);
    const other = chunkFiles('m', 3, [{ name: 'adapter.gguf', data: randomBytes(adapter.length) }, files[1]]);
    chunks[2] = { ...other[2], fileSha256: chunks[2].fileSha256 };
    refused(() => assembleChunks('m', 3, chunks), ErrorCodes.CORRUPT_WEIGHTS, /adapter\.gguf of m v3 assembled to \d+ bytes with sha256/);
  });

  it('refuses missing pieces, pieces of another version and unsafe file names', () => {
    const chunks = chunkFiles('m', 3, files);
    refused(() => assembleChunks('m', 3, chunks.slice(1)), ErrorCodes.CORRUPT_WEIGHTS, /m v3: 1 of its 4 pieces are missing \(0…\)/);
    refused(() => assembleChunks('m', 4, chunks), ErrorCodes.CORRUPT_WEIGHTS, /a piece of m v3 was filed under m v4/);
    refused(() => assembleChunks('m', 3, []), ErrorCodes.NOT_FOUND, /no piece of m v3/);
    refused(() => chunkFiles('m', 3, [{ name: '../x', data: manifest }]), ErrorCodes.INVALID_INPUT, /not a plain file name/);
    const evil = chunkFiles('m', 3, [{ name: 'x', data: manifest }]).map((c) => ({ ...c, file: '../../etc/x' }));
    refused(() => assembleChunks('m', 3, evil), ErrorCodes.CORRUPT_WEIGHTS, /names a file "..\/..\/etc\/x"/);
  });

  it('names where a version is: kafka://<topic>/<modelId>/<version>, keys <modelId>/<version>/<index>', () => {
    const uri = weightBlobUri('t1.turnstream.weight-blobs.v1', 'smollm2-135m', 12);
    assert.equal(uri, 'kafka://t1.turnstream.weight-blobs.v1/smollm2-135m/12');
    assert.deepEqual(parseWeightBlobUri(uri), { topic: 't1.turnstream.weight-blobs.v1', modelId: 'smollm2-135m', version: 12 });
    assert.equal(parseWeightBlobUri('/home/x/weights/smollm2-135m/v12'), null);
    assert.equal(parseWeightBlobUri('file:///home/x/weights/smollm2-135m/v12'), null);
    assert.equal(weightChunkKey('smollm2-135m', 12, 3), 'smollm2-135m/12/3');
  });
});
