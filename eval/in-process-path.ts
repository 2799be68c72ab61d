/**
 * Learning in-process: each reply and the persona's reaction form the TurnPair the session
 * assembler would emit, judged by the embedded judge (processors/judge) and made a sample by the
 * sample builder with the frozen base as OPD teacher (processors/sample-builder), as the pipeline
 * does; at the end of each block the learner's step (trainer/policy-stepper.ts) makes the next
 * version. Only the transport is left out: no gateway, no Kafka.
 */
import type { Sample } from '../schemas/index.ts';
import { buildSample, createEmbeddedJudge, makeJudgement, type TrainMethod } from '../processors/index.ts';
import type { EvalModel, EvalModels } from './eval-model.ts';
import type { EvalLearnerReport } from './eval-learner.ts';
import type { LearningPath, PathTurn, RunPath } from './learning-path.ts';
import type { Persona } from './persona.ts';
import { eventMessages, makePair, onTheWire } from './turn-pair.ts';

export interface InProcessPathOptions {
  models: EvalModels;
  method: TrainMethod;
  /** What eval.json says of the learner (the caller's plan). */
  learner?: EvalLearnerReport;
}

/** The judge's verdict on a pair as the sample builder turns it into a sample (null: nothing to train), as both read them off Kafka. */
export async function judgedSample(
  judge: ReturnType<typeof createEmbeddedJudge>,
  pair: Parameters<ReturnType<typeof createEmbeddedJudge>['evaluate']>[0],
  method: TrainMethod,
  teacher: EvalModel['teacher'],
): Promise<{ sample: Sample | null; score: number }> {
  const { votes, score, hint } = judge.evaluate(pair);
  const built = await buildSample(onTheWire('judgements', makeJudgement(pair, 'embedded', votes, score, hint, Date.now())), {
    method,
    teacher,
  });
  return { sample: built.sample ? onTheWire('samples', built.sample) : null, score };
}

export function inProcessPath(o: InProcessPathOptions): LearningPath {
  const tally = { agree: 0, total: 0 };
  return {
    mode: 'in-process',
    async open(persona: Persona, seed: number): Promise<RunPath> {
      const runId = `${persona.name}-seed${seed}`;
      const m = await o.models.open(runId);
      const judge = createEmbeddedJudge({ mode: o.method });
      let batch: Sample[] = [];
      let trained = 0;
      return {
        runId,
        pastVersions: m.pastVersions,
        async heldOut(messages, s, n, _label, version) {
          const replies = await m.reply(eventMessages(messages), { seed: s, n, version });
          return { texts: replies.map((r) => r.text), version: version ?? m.version };
        },
        async interact(i, messages, replySeed, react): Promise<PathTurn> {
          const [reply] = await m.reply(eventMessages(messages), { seed: replySeed });
          const reaction = react(reply.text);
          const t0 = performance.now();
          const pair = makePair(runId, i, persona, messages, reply.promptIds, reply, reaction, reply.version, {
            modelId: m.modelId,
            exactLogprobs: reply.exactLogprobs,
          });
          const { sample, score } = await judgedSample(judge, pair, o.method, m.teacher);
          if (score !== 0) {
            tally.total++;
            if (score > 0 === reaction.satisfied) tally.agree++;
          }
          if (sample) batch.push(sample);
          return { reply: reply.text, version: reply.version, reaction, judgingSeconds: (performance.now() - t0) / 1000 };
        },
        async endBlock() {
          const taken = batch;
          batch = [];
          if (taken.length === 0) return null;
          trained += taken.length;
          return m.step(taken);
        },
        trained: () => trained,
        close: () => m.close(),
      };
    },
    judgeAgreement: () => (tally.total ? tally.agree / tally.total : NaN),
    learner: () => o.learner,
  };
}
