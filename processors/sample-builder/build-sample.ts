/**
 * Judgement → training sample (docs/design/algorithms.md §4–5).
 *
 * - RL: reward = the majority score broadcast over the response tokens; score 0 → no sample.
 * - OPD: an accepted hint → the teacher's log-probs of the ORIGINAL response tokens under the
 *   prompt with the hint appended; reward 0. No hint → no sample.
 * - COMBINED (default): hint + score → both; hint only → teacher, reward 0; score only → reward
 *   and `teacherLogprobs = null`, so the teacher term is exactly 0; neither → no sample.
 *
 * A pair closed by an end marker with nothing trainable becomes a fully MASKED sample (loss mask
 * all 0, reward 0, no teacher): it only changes the trainer's denominator, as the reference's
 * kept-masked last turn does. (With the assembler's `endPolicy: 'drop'` such pairs never come.)
 *
 * Turns the engine did not tokenize, empty responses and the steps of gym rollouts (trained by
 * their group, processors/group-builder) never become samples here. The sample id is
 * `${turnId}:${method}`, so rebuilding a judgement yields the same sample.
 */
import { isRolloutStep, type Judgement, type Sample, type SampleMethod } from '../../schemas/index.ts';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { appendHint, type Teacher } from './teacher.ts';
import { SAMPLE_BUILDER_DEFAULTS } from '../defaults.ts';

export type TrainMethod = 'rl' | 'opd' | 'combined';

export interface SampleBuilderOptions {
  /** Which samples to build. `TRAIN_METHOD` @default SAMPLE_BUILDER_DEFAULTS.method ('combined') */
  method?: TrainMethod;
  /** Frozen teacher for OPD / combined; without one, hints are not used (RL part only). @default undefined */
  teacher?: Teacher;
  /** Teacher top-k log-probs per position (0 = none). `TEACHER_TOP_K` @default SAMPLE_BUILDER_DEFAULTS.topK (0) */
  topK?: number;
  /** Emit a fully masked sample for an end-marker pair with nothing trainable. @default true */
  maskedEndSamples?: boolean;
}

export type SkipReason = 'untokenized' | 'empty-response' | 'no-signal' | 'no-hint' | 'zero-score' | 'rollout-step';

export interface BuildResult {
  sample: Sample | null;
  skipped?: SkipReason;
}

export interface BuildCallOptions {
  signal?: AbortSignal;
  /** The sample's `createdAt`. @default Date.now() */
  now?: number;
}

const METHODS: Record<TrainMethod, SampleMethod> = { rl: 'RL', opd: 'OPD', combined: 'COMBINED' };

function checkTeacher(logprobs: number[], n: number): void {
  if (logprobs.length !== n || !logprobs.every((x) => Number.isFinite(x) && x <= 1e-6)) {
    throw new TurnstreamError(
      ErrorCodes.UPSTREAM,
      `teacher returned ${logprobs.length} log-probs for ${n} response tokens (or non-finite / positive values)`,
      {
        retriable: false,
      },
    );
  }
}

/** Builds the sample a judgement yields under `options`, or says why there is none. */
export async function buildSample(
  judgement: Judgement,
  options: SampleBuilderOptions = {},
  call: BuildCallOptions = {},
): Promise<BuildResult> {
  const method = options.method ?? SAMPLE_BUILDER_DEFAULTS.method;
  const pair = judgement.pair;
  const turn = pair.turn;
  // A gym rollout's steps are trained by their group (processors/group-builder), on its outcome.
  if (isRolloutStep(turn.metadata)) return { sample: null, skipped: 'rollout-step' };
  if (!turn.tokenized) return { sample: null, skipped: 'untokenized' };
  const n = turn.responseTokenIds.length;
  if (n === 0) return { sample: null, skipped: 'empty-response' };
  if (turn.responseLogprobs.length !== n) {
    throw new TurnstreamError(
      ErrorCodes.INVALID_INPUT,
      `turn ${turn.turnId} has ${turn.responseLogprobs.length} rollout log-probs for ${n} response tokens`,
      {
        param: 'responseLogprobs',
      },
    );
  }

  const useScore = method !== 'opd' && judgement.score !== 0;
  const useHint = method !== 'rl' && judgement.hint !== null && options.teacher !== undefined;
  let reward = 0;
  let teacherLogprobs: number[] | null = null;
  let teacherTopK: Sample['teacherTopK'] = null;
  let teacherPromptTokens: number[] | null = null;
  let mask = 1;
  if (!useScore && !useHint) {
    if (pair.endMarker === null || options.maskedEndSamples === false) {
      return { sample: null, skipped: method === 'opd' ? 'no-hint' : method === 'rl' ? 'zero-score' : 'no-signal' };
    }
    mask = 0;
  } else {
    if (useScore) reward = judgement.score;
    if (useHint) {
      const k = options.topK ?? SAMPLE_BUILDER_DEFAULTS.topK;
      const scored = await options.teacher!.score(appendHint(turn.requestMessages, judgement.hint!), turn.responseTokenIds, {
        topK: k,
        signal: call.signal,
        rollout: { messages: turn.requestMessages, toolsJson: turn.toolsJson, promptTokens: turn.promptTokenIds.length },
      });
      if (scored.deferredPromptTokens) {
        // The learner scores the response under this prompt with its own current policy.
        teacherPromptTokens = scored.deferredPromptTokens;
      } else {
        checkTeacher(scored.logprobs, n);
        teacherLogprobs = scored.logprobs;
      }
      if (k > 0 && scored.topK) {
        if (scored.topK.length !== n)
          throw new TurnstreamError(ErrorCodes.UPSTREAM, `teacher returned top-k for ${scored.topK.length} of ${n} positions`, {
            retriable: false,
          });
        teacherTopK = scored.topK;
      }
    }
  }

  const m = METHODS[method];
  return {
    sample: {
      sampleId: `${turn.turnId}:${m}`,
      turnId: turn.turnId,
      sessionId: pair.sessionId,
      userId: pair.userId,
      policyModelId: turn.policyModelId,
      policyVersion: turn.policyVersion,
      method: m,
      tokens: [...turn.promptTokenIds, ...turn.responseTokenIds],
      promptLength: turn.promptTokenIds.length,
      responseLength: n,
      lossMask: new Array<number>(n).fill(mask),
      rolloutLogprobs: turn.responseLogprobs,
      exactLogprobs: turn.exactLogprobs,
      samplingTemperature: turn.samplingTemperature ?? 1,
      samplingTopP: turn.samplingTopP ?? 1,
      promptHeadTokens: turn.promptHeadTokens ?? 0,
      reward,
      teacherLogprobs,
      teacherTopK,
      teacherPromptTokens,
      weight: 1,
      judgeId: judgement.judgeId,
      createdAt: call.now ?? Date.now(),
      tag: judgement.tag,
    },
  };
}
