import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import avro from 'avsc';
import { avroTypeOf, invalidPaths, TOPICS, topicName, type TopicId, type Turn } from '../../../schemas/index.ts';
import { renderAvsc } from '../../../schemas/write-avsc.ts';
import * as fx from '../../support/fixtures.ts';

const examples: Record<TopicId, unknown> = {
  turns: fx.exampleTurn(),
  feedback: fx.exampleFeedback(),
  sessionState: fx.exampleSessionState(),
  pairs: fx.examplePair(),
  judgements: fx.exampleJudgement(),
  samples: fx.exampleSample(),
  weights: fx.exampleWeightVersion(),
  weightBlobs: fx.exampleWeightChunk(),
  rewards: fx.exampleReward(),
  trajectoryState: fx.exampleTrajectoryState(),
  trajectories: fx.exampleTrajectory(),
  batchState: fx.exampleBatchState(),
  dlq: fx.exampleDeadLetter(),
  dlqReplays: fx.exampleDeadLetterReplay(),
};

const grpoSample = fx.exampleSample({
  method: 'RL',
  teacherLogprobs: null,
  teacherTopK: null,
  reward: 0.5,
  group: {
    batchId: 'run1-b0',
    batchSamples: 8,
    groupId: 'b0-upper-copy',
    taskId: 'upper-copy',
    rolloutIndex: 1,
    outcome: 1,
    advantage: 0.5,
  },
});
const rolloutTurn = fx.exampleTurn({ metadata: { gym_task: 'upper-copy', gym_group: 'b0-upper-copy', gym_rollout: '1' } });

describe('schemas', () => {
  for (const id of Object.keys(TOPICS) as TopicId[]) {
    it(`${id}: the TypeScript example is exactly valid Avro and round-trips`, () => {
      const type = avroTypeOf(id);
      // noUndeclaredFields: a field in types.ts but not in the schema fails here; a field in
      // the schema but not in types.ts fails to compile in fixtures.ts or is undefined here.
      assert.deepEqual(invalidPaths(type, examples[id]), []);
      assert.ok(type.isValid(examples[id], { noUndeclaredFields: true }), `${id} has fields the schema lacks`);
      const back = type.fromBuffer(type.toBuffer(examples[id]));
      assert.deepEqual(JSON.parse(JSON.stringify(back)), JSON.parse(JSON.stringify(examples[id])));
    });
  }

  it('a GRPO sample (its group) and a turn with request metadata round-trip', () => {
    for (const [id, v] of [
      ['samples', grpoSample],
      ['turns', rolloutTurn],
    ] as const) {
      const type = avroTypeOf(id);
      assert.deepEqual(invalidPaths(type, v), []);
      assert.deepEqual(JSON.parse(JSON.stringify(type.fromBuffer(type.toBuffer(v)))), JSON.parse(JSON.stringify(v)));
    }
  });

  it('reports the path of an invalid field', () => {
    const bad = { ...fx.exampleTurn(), turnType: 'SOMETIMES', latencyMs: 'slow' };
    const paths = invalidPaths(avroTypeOf('turns'), bad);
    assert.ok(paths.some((p) => p.startsWith('turnType=')));
    assert.ok(paths.some((p) => p.startsWith('latencyMs=')));
  });

  it('names topics with a prefix and a replay tag, leaving the history topics shared', () => {
    assert.equal(topicName('turns'), 'turnstream.turns.v1');
    assert.equal(topicName('pairs', { prefix: 't1.' }), 't1.turnstream.pairs.v1');
    assert.equal(topicName('samples', { tag: 'judge-b' }), 'turnstream.replay.judge-b.samples.v1');
    assert.equal(topicName('turns', { tag: 'judge-b' }), 'turnstream.turns.v1');
  });

  it('every schema is a self-contained Avro record, and schemas/avsc/ is current', () => {
    for (const [name, text] of renderAvsc()) {
      const schema = JSON.parse(text);
      assert.equal(schema.type, 'record');
      assert.doesNotThrow(() => avro.Type.forSchema(schema));
      const onDisk = readFileSync(join(import.meta.dirname, '../../../schemas/avsc', name), 'utf8');
      assert.equal(onDisk, text, `${name} is stale: run npm run schemas:write`);
    }
  });

  it('schema evolution: a reader of the current Turn schema reads a record without the defaulted fields', () => {
    const current = avroTypeOf('turns');
    const old = JSON.parse(JSON.stringify(TOPICS.turns.schema()));
    old.fields = old.fields.filter((f: { name: string }) => !['promptTruncatedTokens', 'sessionDone', 'metadata'].includes(f.name));
    const oldType = avro.Type.forSchema(old);
    const { promptTruncatedTokens: _a, sessionDone: _b, metadata: _c, ...rest } = fx.exampleTurn();
    const resolver = current.createResolver(oldType);
    const read = current.fromBuffer(oldType.toBuffer(rest), resolver) as {
      promptTruncatedTokens: number;
      sessionDone: boolean;
      metadata: object;
    };
    assert.equal(read.promptTruncatedTokens, 0);
    assert.equal(read.sessionDone, false);
    assert.deepEqual(read.metadata, {});
  });

  it('schema evolution: a Turn written before n choices, raw prompts and sampling extras reads as choice 0 of a chat, with none of them', () => {
    const current = avroTypeOf('turns');
    const old = JSON.parse(JSON.stringify(TOPICS.turns.schema()));
    old.fields = old.fields.filter((f: { name: string }) => !['choiceIndex', 'rawPrompt'].includes(f.name));
    const sampling = old.fields.find((f: { name: string }) => f.name === 'sampling');
    sampling.type.fields = sampling.type.fields.filter(
      (f: { name: string }) => !['presencePenalty', 'frequencyPenalty', 'responseFormat'].includes(f.name),
    );
    const { choiceIndex: _a, rawPrompt: _b, sampling: full, ...rest } = fx.exampleTurn();
    const { presencePenalty: _c, frequencyPenalty: _d, responseFormat: _e, ...oldSampling } = full;
    const oldType = avro.Type.forSchema(old);
    const read = current.fromBuffer(oldType.toBuffer({ ...rest, sampling: oldSampling }), current.createResolver(oldType)) as Turn;
    assert.equal(read.choiceIndex, 0);
    assert.equal(read.rawPrompt, false);
    assert.deepEqual({ ...read.sampling }, { ...oldSampling, presencePenalty: null, frequencyPenalty: null, responseFormat: null });
  });
});
