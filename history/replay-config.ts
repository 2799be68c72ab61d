/**
 * The replay configuration file (`turnstream replay --config FILE`), JSON. Every field is optional;
 * what is left out keeps the live pipeline's setting (the environment, see cli/config.ts), except
 * where noted.
 *
 *   {
 *     "judge": {
 *       "baseUrl": "http://127.0.0.1:8000/v1",   // OpenAI-compatible judge; null = embedded judge
 *       "model": "qwen3-8b", "apiKey": "…",
 *       "mode": "rl" | "opd" | "combined",       // default: samples.method
 *       "votes": 3, "hintVotes": 1, "temperature": 0.6, "maxTokens": 1024,
 *       "timeoutMs": 60000, "retries": 2,
 *       "id": "my-judge",                         // judge id in judgements (default llm:<model> / embedded)
 *       "judgeUntrainable": true                  // also judge untokenized (imported) turns; replay default true
 *     },
 *     "session": { "idleTimeoutMs": 1800000, "endPolicy": "masked" | "drop", "feedbackGraceMs": 5000 },
 *     "samples": {
 *       "method": "rl" | "opd" | "combined",
 *       "maskedEndSamples": true, "topK": 0,
 *       "teacher": "none" | "policy" | { "baseUrl": "…", "model": "…", "apiKey": "…" }   // replay default "none"
 *     },
 *     "concurrency": 64,                          // records in flight per stage
 *     "batchSize": 2000                           // pairs per output transaction
 *   }
 */
import { readFileSync } from 'node:fs';
import type { EndPolicy, LlmJudgeOptions, TrainMethod } from '../processors/index.ts';

/** The LLM judge's settings (null `baseUrl`: the embedded judge), its id and whether it judges side turns too. */
export interface ReplayJudgeConfig extends Partial<
  Pick<LlmJudgeOptions, 'model' | 'apiKey' | 'mode' | 'votes' | 'hintVotes' | 'temperature' | 'maxTokens' | 'timeoutMs' | 'retries'>
> {
  baseUrl?: string | null;
  id?: string;
  judgeUntrainable?: boolean;
}

export interface ReplayConfig {
  judge?: ReplayJudgeConfig;
  session?: { idleTimeoutMs?: number; endPolicy?: EndPolicy; feedbackGraceMs?: number };
  samples?: {
    method?: TrainMethod;
    maskedEndSamples?: boolean;
    topK?: number;
    teacher?: 'none' | 'policy' | { baseUrl: string; model?: string; apiKey?: string };
  };
  concurrency?: number;
  batchSize?: number;
}

const SHAPE: Record<string, Record<string, string> | string> = {
  judge: {
    baseUrl: 'string|null',
    model: 'string',
    apiKey: 'string',
    mode: 'rl|opd|combined',
    votes: 'int>0',
    hintVotes: 'int>=0',
    temperature: 'number>=0',
    maxTokens: 'int>0',
    timeoutMs: 'int>0',
    retries: 'int>=0',
    id: 'string',
    judgeUntrainable: 'boolean',
  },
  session: { idleTimeoutMs: 'int>0', endPolicy: 'masked|drop', feedbackGraceMs: 'int>=0' },
  samples: { method: 'rl|opd|combined', maskedEndSamples: 'boolean', topK: 'int>=0', teacher: 'teacher' },
  concurrency: 'int>0',
  batchSize: 'int>0',
};

function check(path: string, kind: string, v: unknown): string | null {
  const isInt = typeof v === 'number' && Number.isInteger(v);
  switch (kind) {
    case 'string':
      return typeof v === 'string' && v !== '' ? null : 'a non-empty string';
    case 'string|null':
      return v === null || (typeof v === 'string' && v !== '') ? null : 'a URL string or null';
    case 'boolean':
      return typeof v === 'boolean' ? null : 'true or false';
    case 'int>0':
      return isInt && (v as number) > 0 ? null : 'an integer > 0';
    case 'int>=0':
      return isInt && (v as number) >= 0 ? null : 'an integer >= 0';
    case 'number>=0':
      return typeof v === 'number' && v >= 0 ? null : 'a number >= 0';
    case 'teacher':
      if (v === 'none' || v === 'policy') return null;
      return typeof v === 'object' && v !== null && typeof (v as { baseUrl?: unknown }).baseUrl === 'string'
        ? null
        : '"none", "policy" or {"baseUrl", "model"?, "apiKey"?}';
    default:
      return kind.split('|').includes(v as string) ? null : `one of ${kind.split('|').join(', ')}`;
  }
}

/** Validates a parsed config; throws with every problem (path and expectation). */
export function validateReplayConfig(raw: unknown): ReplayConfig {
  const problems: string[] = [];
  if (typeof raw !== 'object' || raw === null || Array.isArray(raw)) throw new Error('replay config: expected a JSON object');
  for (const [k, v] of Object.entries(raw)) {
    const shape = SHAPE[k];
    if (shape === undefined) problems.push(`${k}: unknown setting (known: ${Object.keys(SHAPE).join(', ')})`);
    else if (typeof shape === 'string') {
      const e = check(k, shape, v);
      if (e) problems.push(`${k}: expected ${e}, got ${JSON.stringify(v)}`);
    } else if (typeof v !== 'object' || v === null || Array.isArray(v)) problems.push(`${k}: expected an object`);
    else {
      for (const [k2, v2] of Object.entries(v)) {
        const kind = shape[k2];
        if (kind === undefined) problems.push(`${k}.${k2}: unknown setting (known: ${Object.keys(shape).join(', ')})`);
        else {
          const e = check(`${k}.${k2}`, kind, v2);
          if (e) problems.push(`${k}.${k2}: expected ${e}, got ${JSON.stringify(v2)}`);
        }
      }
    }
  }
  if (problems.length > 0) throw new Error(`replay config is invalid:\n  ${problems.join('\n  ')}`);
  return raw as ReplayConfig;
}

export function loadReplayConfig(file: string): ReplayConfig {
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(file, 'utf8'));
  } catch (err) {
    throw new Error(`cannot read replay config ${file}: ${(err as Error).message}`);
  }
  return validateReplayConfig(raw);
}
