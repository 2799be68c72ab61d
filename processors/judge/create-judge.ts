/** Picks the judge: the LLM judge when a judge endpoint is configured, else the embedded one. */
import { EmbeddedJudge, type EmbeddedJudgeOptions } from './embedded-judge.ts';
import type { Judge, JudgeMode } from './judge.ts';
import { JUDGE_DEFAULTS } from '../defaults.ts';
import { LlmJudge, type LlmJudgeOptions } from './llm-judge.ts';

export interface CreateJudgeOptions extends Omit<Partial<LlmJudgeOptions>, 'mode' | 'id'>, Omit<EmbeddedJudgeOptions, 'mode' | 'id'> {
  /** What the judge is asked for (follows the training method). @default 'combined' */
  mode?: JudgeMode;
}

/** An `LlmJudge` when `baseUrl` is given (`JUDGE_BASE_URL`), else an `EmbeddedJudge`. */
export function createJudge(options: CreateJudgeOptions = {}): Judge {
  if (options.baseUrl) return new LlmJudge({ ...options, baseUrl: options.baseUrl, model: options.model ?? JUDGE_DEFAULTS.model });
  return new EmbeddedJudge({ mode: options.mode, sentiment: options.sentiment });
}
