/**
 * The LLM judge: any OpenAI-compatible `POST /chat/completions` endpoint, through the official
 * `openai` client (core/openai-client.ts; it never retries: core/retry.ts does). Votes for a pair are
 * sent concurrently; each vote has its own timeout and retries retriable failures (network
 * errors, timeouts, 429, 5xx, malformed replies) with exponential backoff. An answer without a
 * valid `\boxed{}` is an invalid vote (null), not a failure. When EVERY vote of a kind failed the
 * pair is not scored 0: `judge()` throws `TurnstreamError(JUDGE_FAILED)` with the reasons, so the
 * runtime sends it to the DLQ and a replay can re-judge it.
 */
import type { Judgement, TurnPair, Vote } from '../../schemas/index.ts';
import type OpenAI from 'openai';
import { ErrorCodes, TurnstreamError, retry, withDefaults } from '../../core/index.ts';
import { jsonOf, openAIClient, openAIFailure } from '../../core/openai-client.ts';
import { parseBoxed, parseHint } from './boxed.ts';
import { hasEvidence, makeJudgement, type Judge, type JudgeCallOptions, type JudgeMode } from './judge.ts';
import { majorityVote, selectHint } from './majority-vote.ts';
import { hintPrompt, prmPrompt, type JudgeMessage } from './prompts.ts';
import { JUDGE_DEFAULTS } from '../defaults.ts';

export interface LlmJudgeOptions {
  /** Base URL of the OpenAI-compatible API, e.g. `http://127.0.0.1:8000/v1`. `JUDGE_BASE_URL` */
  baseUrl: string;
  /** Model name sent in each request. `JUDGE_MODEL` (through createJudge: @default JUDGE_DEFAULTS.model ('judge')) */
  model: string;
  /** Bearer token. `JUDGE_API_KEY` @default undefined (no Authorization header) */
  apiKey?: string;
  /** What to ask for. @default JUDGE_DEFAULTS.mode ('combined') */
  mode?: JudgeMode;
  /** Process-reward votes per pair (m). `JUDGE_VOTES` @default JUDGE_DEFAULTS.votes (3) */
  votes?: number;
  /** Hint votes per pair (OPD and combined). `JUDGE_HINT_VOTES` @default JUDGE_DEFAULTS.hintVotes (1) */
  hintVotes?: number;
  /** Sampling temperature of the judge. @default JUDGE_DEFAULTS.temperature (0.6) */
  temperature?: number;
  /** `max_tokens` of each judge answer. @default JUDGE_DEFAULTS.maxTokens (1024) */
  maxTokens?: number;
  /** Bound on one attempt of one vote, in ms. `JUDGE_TIMEOUT_MS` @default JUDGE_DEFAULTS.timeoutMs (60000) */
  timeoutMs?: number;
  /** Retries of a vote after its first attempt, on retriable failures. @default JUDGE_DEFAULTS.retries (2) */
  retries?: number;
  /** First backoff delay in ms (doubles per retry, up to 10 s). @default JUDGE_DEFAULTS.minBackoffMs (500) */
  minBackoffMs?: number;
  /** Longest quoted text per prompt block, in characters. @default JUDGE_DEFAULTS.maxQuoteChars (4000) */
  maxQuoteChars?: number;
  /** Judge id in judgements. @default `llm:<model>` */
  id?: string;
  /** For tests and custom transports. @default globalThis.fetch */
  fetch?: typeof fetch;
}

type VoteKind = 'prm' | 'hint';

/** Asks an OpenAI-compatible endpoint for one completion; errors classified as retriable or not. */
async function complete(
  client: OpenAI,
  opts: Required<Pick<LlmJudgeOptions, 'baseUrl' | 'model' | 'temperature' | 'maxTokens'>>,
  messages: JudgeMessage[],
  signal: AbortSignal,
): Promise<string | null> {
  const url = `${opts.baseUrl.replace(/\/+$/, '')}/chat/completions`;
  let body: { choices?: Array<{ message?: { content?: unknown } }> };
  try {
    const data = await client.chat.completions.create(
      { model: opts.model, messages, temperature: opts.temperature, max_tokens: opts.maxTokens, stream: false },
      { signal },
    );
    body = jsonOf(data) as typeof body;
  } catch (err) {
    throw callError(err, signal, url);
  }
  const choice = body?.choices?.[0];
  if (!choice || typeof choice.message !== 'object')
    throw new TurnstreamError(ErrorCodes.UPSTREAM, 'judge reply has no choices[0].message');
  const content = choice.message?.content;
  return typeof content === 'string' ? content : null;
}

/** A failed call as the judge words it: timed out or aborted (by the signal), unreachable, an error status, an unreadable reply. */
function callError(err: unknown, signal: AbortSignal, url: string): TurnstreamError {
  if (signal.aborted) return abortReason(signal, err);
  const f = openAIFailure(err);
  switch (f.kind) {
    case 'aborted':
      return new TurnstreamError(ErrorCodes.ABORTED, 'judge vote aborted', { cause: err, retriable: false });
    case 'timeout':
      return new TurnstreamError(ErrorCodes.TIMEOUT, 'judge vote timed out', { cause: err });
    case 'unreachable':
      return new TurnstreamError(ErrorCodes.UNAVAILABLE, `judge unreachable at ${url}: ${f.reason}`, { cause: err });
    case 'status': {
      const retriable = f.status === 408 || f.status === 429 || f.status >= 500;
      return new TurnstreamError(ErrorCodes.UPSTREAM, `judge answered HTTP ${f.status}: ${f.body.slice(0, 200)}`, {
        retriable,
        cause: err,
      });
    }
    case 'not-json':
      return new TurnstreamError(ErrorCodes.UPSTREAM, `judge reply is not JSON: ${f.reason.slice(0, 200)}`, { cause: err });
    case 'unreadable':
      return new TurnstreamError(ErrorCodes.UPSTREAM, `judge reply could not be read: ${f.reason}`, { cause: err });
  }
}

function abortReason(signal: AbortSignal, cause: unknown): TurnstreamError {
  const r = signal.reason as { name?: string } | undefined;
  return r?.name === 'TimeoutError'
    ? new TurnstreamError(ErrorCodes.TIMEOUT, 'judge vote timed out', { cause })
    : new TurnstreamError(ErrorCodes.ABORTED, 'judge vote aborted', { cause, retriable: false });
}

export class LlmJudge implements Judge {
  readonly id: string;
  private readonly o: Required<Omit<LlmJudgeOptions, 'apiKey' | 'id' | 'fetch'>> & { apiKey?: string };
  private readonly client: OpenAI;

  constructor(options: LlmJudgeOptions) {
    if (!options.baseUrl) throw new TurnstreamError(ErrorCodes.INVALID_INPUT, 'LLM judge needs a baseUrl', { param: 'baseUrl' });
    this.o = {
      ...withDefaults<Required<Pick<LlmJudgeOptions, keyof typeof JUDGE_DEFAULTS>>>(JUDGE_DEFAULTS, options),
      baseUrl: options.baseUrl,
      model: options.model,
      apiKey: options.apiKey,
    };
    if (!(this.o.votes >= 1) || !(this.o.hintVotes >= 1)) throw new RangeError('votes and hintVotes must be >= 1');
    this.id = options.id ?? `llm:${options.model}`;
    this.client = openAIClient({ baseURL: this.o.baseUrl, apiKey: this.o.apiKey, timeoutMs: this.o.timeoutMs, fetch: options.fetch });
  }

  /** One vote: the completion, retried per the options, parsed. Never throws (except on abort). */
  private async vote(index: number, kind: VoteKind, messages: JudgeMessage[], signal?: AbortSignal): Promise<Vote> {
    const started = performance.now();
    let attempts = 0;
    try {
      // Non-retriable failures (4xx, shutdown) end the vote at once.
      const text = await retry(
        () => {
          attempts++;
          const timeout = AbortSignal.timeout(this.o.timeoutMs);
          return complete(this.client, this.o, messages, signal ? AbortSignal.any([signal, timeout]) : timeout);
        },
        { attempts: this.o.retries + 1, baseMs: this.o.minBackoffMs, maxMs: 10_000, signal },
      );
      const score = parseBoxed(text);
      const hint = kind === 'hint' && score === 1 ? parseHint(text) : null;
      return { index, score, hint, latencyMs: Math.round(performance.now() - started), error: null, attempts };
    } catch (err) {
      if (signal?.aborted) throw new TurnstreamError(ErrorCodes.ABORTED, 'judging aborted', { cause: err, retriable: false });
      const message = err instanceof TurnstreamError ? `${err.code}: ${err.message}` : String((err as Error)?.message ?? err);
      return { index, score: null, hint: null, latencyMs: Math.round(performance.now() - started), error: message, attempts };
    }
  }

  async judge(pair: TurnPair, opts: JudgeCallOptions = {}): Promise<Judgement> {
    const now = () => opts.now ?? Date.now();
    // Nothing followed (an end marker without feedback): nothing to ask a model about.
    if (!hasEvidence(pair)) return makeJudgement(pair, this.id, [], 0, null, now());
    const { mode, votes: m, hintVotes } = this.o;
    const wantPrm = mode !== 'opd';
    const wantHint = mode !== 'rl';
    const prm = wantPrm ? prmPrompt(pair, { maxQuoteChars: this.o.maxQuoteChars }) : [];
    const hintMsgs = wantHint ? hintPrompt(pair, { maxQuoteChars: this.o.maxQuoteChars }) : [];
    // Votes are indexed process-reward first, then hint votes.
    const prmVotes = wantPrm ? Array.from({ length: m }, (_, i) => this.vote(i, 'prm', prm, opts.signal)) : [];
    const hintStart = wantPrm ? m : 0;
    const hVotes = wantHint ? Array.from({ length: hintVotes }, (_, i) => this.vote(hintStart + i, 'hint', hintMsgs, opts.signal)) : [];
    const [p, h] = await Promise.all([Promise.all(prmVotes), Promise.all(hVotes)]);
    for (const [kind, vs] of [
      ['process-reward', p],
      ['hint', h],
    ] as const) {
      if (vs.length > 0 && vs.every((v) => v.error !== null)) {
        const reasons = [...new Set(vs.map((v) => v.error))].join('; ');
        throw new TurnstreamError(ErrorCodes.JUDGE_FAILED, `all ${vs.length} ${kind} votes for turn ${pair.pairId} failed: ${reasons}`, {
          retriable: false,
        });
      }
    }
    const score = wantPrm ? majorityVote(p.map((v) => v.score)) : 0;
    const hint = wantHint ? selectHint(h) : null;
    return makeJudgement(pair, this.id, [...p, ...h], score, hint, now());
  }
}

export const createLlmJudge = (options: LlmJudgeOptions): LlmJudge => new LlmJudge(options);
