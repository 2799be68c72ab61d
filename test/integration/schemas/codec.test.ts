import assert from 'node:assert/strict';
import { before, describe, it } from 'node:test';
import avro from 'avsc';
import { AvroCodec, createRegistryClient, TOPICS, topicName, valueSubject, type Turn } from '../../../schemas/index.ts';
import { createEventCodecs } from '../../../streams/index.ts';
import { exampleTurn } from '../../support/fixtures.ts';
import { ensureStack, uniquePrefix } from '../../support/stack.ts';

let registryUrl: string;

describe('Avro codecs against the real registry', () => {
  before(async () => {
    registryUrl = (await ensureStack()).registryUrl;
  });

  it('round-trips every event type in the Confluent wire format', async () => {
    const codecs = await createEventCodecs({ registryUrl, naming: { prefix: uniquePrefix('codec-rt') } });
    const bytes = await codecs.of('turns').encode(exampleTurn());
    assert.equal(bytes[0], 0, 'magic byte');
    assert.deepEqual(JSON.parse(JSON.stringify(await codecs.of('turns').decode(bytes))), JSON.parse(JSON.stringify(exampleTurn())));
  });

  it('encodes a value larger than its scratch buffer, and smaller ones after it, with the wire header intact', async () => {
    const codecs = await createEventCodecs({ registryUrl, naming: { prefix: uniquePrefix('codec-big') } });
    const codec = codecs.of('turns');
    const big = exampleTurn({ turnId: 'big', response: { ...exampleTurn().response, content: 'x'.repeat(50_000) } });
    for (const value of [exampleTurn({ turnId: 'small-1' }), big, exampleTurn({ turnId: 'small-2' })]) {
      const bytes = codec.encodeNow(value);
      assert.equal(bytes[0], 0, 'magic byte');
      assert.deepEqual(bytes.subarray(0, 5), (await codec.encode(exampleTurn())).subarray(0, 5), 'the schema id');
      assert.deepEqual(JSON.parse(JSON.stringify(await codec.decode(bytes))), JSON.parse(JSON.stringify(value)));
    }
  });

  it('reads records written with an older schema version, filling the new fields with their defaults', async () => {
    const prefix = uniquePrefix('codec-evolve');
    const subject = valueSubject(topicName('turns', { prefix }));
    const client = createRegistryClient({ url: registryUrl });
    // Version 1 of Turn lacked two fields that the current schema adds with defaults.
    const old = JSON.parse(JSON.stringify(TOPICS.turns.schema()));
    old.fields = old.fields.filter((f: { name: string }) => f.name !== 'promptTruncatedTokens' && f.name !== 'sessionDone');
    const oldId = await client.register(subject, { schemaType: 'AVRO', schema: JSON.stringify(old) }, false);
    const codecs = await createEventCodecs({ registryUrl, naming: { prefix } });
    const { promptTruncatedTokens: _a, sessionDone: _b, ...v1 } = exampleTurn({ latencyMs: 77 });
    const header = Buffer.alloc(5);
    header.writeInt32BE(oldId, 1);
    const bytes = Buffer.concat([header, avro.Type.forSchema(old).toBuffer(v1)]);
    // No promise where none is needed: an unknown writer schema needs the registry first.
    assert.equal(codecs.of('turns').decodeNow(bytes), undefined);
    const turn = await codecs.of('turns').decode(bytes);
    assert.equal(turn.latencyMs, 77);
    assert.equal(turn.promptTruncatedTokens, 0);
    assert.equal(turn.sessionDone, false);
    // Once resolved, that writer reads at once too; so does our own, and garbage throws at once.
    assert.equal(codecs.of('turns').decodeNow(bytes)?.latencyMs, 77);
    assert.equal(codecs.of('turns').decodeNow(await codecs.of('turns').encode(exampleTurn({ latencyMs: 5 })))?.latencyMs, 5);
    assert.throws(
      () => codecs.of('turns').decodeNow(Buffer.from([1, 2, 3, 4, 5, 6])),
      (e: Error & { code?: string }) => e.code === 'TS_ERR_DECODE' && /unknown magic byte/.test(e.message),
    );
  });

  it('refuses an incompatible schema change (BACKWARD), and rejects invalid values and garbage bytes with clear codes', async () => {
    const prefix = uniquePrefix('codec-compat');
    const codecs = await createEventCodecs({ registryUrl, naming: { prefix } });
    const client = createRegistryClient({ url: registryUrl });
    const breaking = JSON.parse(JSON.stringify(TOPICS.turns.schema()));
    breaking.fields.push({ name: 'mandatoryNewField', type: 'string' }); // no default: old records unreadable
    await assert.rejects(
      client.register(valueSubject(topicName('turns', { prefix })), { schemaType: 'AVRO', schema: JSON.stringify(breaking) }, false),
    );
    await assert.rejects(
      codecs.of('turns').encode({ ...exampleTurn(), turnType: 'SOMETIMES' } as never),
      (e: Error & { code?: string }) => {
        assert.equal(e.code, 'TS_ERR_INVALID_INPUT');
        assert.match(e.message, /turnType/);
        return true;
      },
    );
    await assert.rejects(
      codecs.of('turns').decode(Buffer.from('{"json":true}')),
      (e: Error & { code?: string }) => e.code === 'TS_ERR_DECODE',
    );
    await assert.rejects(
      codecs.of('turns').decode(Buffer.from([0, 0, 0, 0, 1, 255])),
      (e: Error & { code?: string }) => e.code === 'TS_ERR_DECODE',
    );
  });
});

describe('Avro codecs when the registry is unreachable', () => {
  it('a record from another writer schema is retriable (UNAVAILABLE), not dead-lettered as undecodable', async () => {
    // Our own schema id decodes without the registry; another writer id needs a lookup, and
    // with the registry gone that lookup fails in transit.
    const down = createRegistryClient({ url: 'http://127.0.0.1:1/apis/ccompat/v7', maxRetries: 0 });
    const codec = new AvroCodec<Turn>(down, 'turns', 'turnstream.turns.v1', 1);
    const own = await codec.encode(exampleTurn());
    assert.equal((await codec.decode(own)).turnId, exampleTurn().turnId);
    const foreign = Buffer.from(own);
    foreign.writeInt32BE(999999, 1);
    await assert.rejects(codec.decode(foreign), (e: Error & { code?: string; retriable?: boolean }) => {
      assert.equal(e.code, 'TS_ERR_UNAVAILABLE');
      assert.equal(e.retriable, true);
      return true;
    });
  });
});
