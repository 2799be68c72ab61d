/**
 * What an eval run's loop (run-eval.ts `evaluate`) leaves to how it learns: in-process (the
 * pipeline's judge and sample builder called directly, and the learner's step: in-process-path.ts)
 * or through the real system (gateway, Kafka, processors and the learner service: pipeline.ts).
 * The loop itself, the users, their random streams and the scoring, is the same for both.
 */
import type { StepMetrics } from '../trainer/index.ts';
import type { EvalLearnerReport } from './eval-learner.ts';
import type { openingMessages, Persona } from './persona.ts';
import type { Reaction } from './reaction.ts';

/** The reply to a training prompt, the persona's reaction to it, and the seconds spent judging it (in-process only). */
export interface PathTurn {
  reply: string;
  version: number;
  reaction: Reaction;
  judgingSeconds: number;
}

/** A persona's opening of a conversation (persona.ts `openingMessages`). */
export type Opening = ReturnType<typeof openingMessages>;

/** One (persona, seed) run's model, from version 0. */
export interface RunPath {
  /** The run's name in progress lines (its model id). */
  readonly runId: string;
  /**
   * `n` replies to a held-out prompt, the i-th drawn with `sampleSeed(seed, i)`; never trained
   * (through the pipeline they are `side` turns). `label` tells the score's requests apart.
   * `version`: an earlier version answers instead of the current one (only where `pastVersions`).
   */
  heldOut(messages: Opening, seed: number, n: number, label: string, version?: number): Promise<{ texts: string[]; version: number }>;
  /** Whether `heldOut` can answer with an earlier version, to measure a run's peak again at its end. */
  readonly pastVersions: boolean;
  /** Interaction `i`: the reply to `messages` (drawn with `sampleSeed(replySeed, 0)`), the persona's reaction, and what learning makes of both. */
  interact(i: number, messages: Opening, replySeed: number, react: (reply: string) => Reaction): Promise<PathTurn>;
  /** A block of interactions ends: in-process the learner's step; through the pipeline, the wait for the version the learner makes of it. */
  endBlock(interactions: number): Promise<StepMetrics | null>;
  /** Samples trained so far. */
  trained(): number;
  close(): Promise<void>;
}

/** How the runs of one eval learn. */
export interface LearningPath {
  readonly mode: 'in-process' | 'pipeline';
  open(persona: Persona, seed: number): Promise<RunPath>;
  /** Share of non-zero judge scores that agree with the personas' hidden satisfaction (NaN: the judge ran elsewhere). */
  judgeAgreement(): number;
  /** The learner the runs trained, when the path knows it. */
  learner(): EvalLearnerReport | undefined;
}
