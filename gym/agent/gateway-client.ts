/**
 * The built-in agent's calls to the gateway, with the official `openai` client: the rollout's
 * session and turn type as headers, its task, group and index as the body's `metadata`, and from
 * each answer the gateway's turn id (`X-Turn-Id`, else the response id `chatcmpl-<turnId>`) and
 * the policy version that served it (`X-Policy-Version`).
 */
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessage } from 'openai/resources/chat/completions';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { openAIClient } from '../../core/openai-client.ts';
import type { RolloutOptions } from './rollout-types.ts';

/** One model call's answer. */
export interface ModelCall {
  message: ChatCompletionMessage;
  /** OpenAI's finish reason (`stop`, `length`, `tool_calls`). */
  finishReason: string;
  turnId: string;
  /** The served version; −1 where the gateway sent no `X-Policy-Version`. */
  policyVersion: number;
  /** Wall time of the call. */
  ms: number;
}

/** The gateway's OpenAI base URL, `/v1` added when missing. */
export function openAIBaseURL(url: string): string {
  const base = url.replace(/\/+$/, '');
  return base.endsWith('/v1') ? base : `${base}/v1`;
}

/** The headers every call of a rollout sends. */
export function rolloutHeaders(o: Pick<RolloutOptions, 'sessionId' | 'userId' | 'turnType'>): Record<string, string> {
  return { 'X-Session-Id': o.sessionId, 'X-Turn-Type': o.turnType ?? 'main', ...(o.userId ? { 'X-User-Id': o.userId } : {}) };
}

/** An OpenAI client bound to one rollout. */
export function rolloutClient(o: Pick<RolloutOptions, 'baseURL' | 'apiKey' | 'sessionId' | 'userId' | 'turnType' | 'maxRetries'>): OpenAI {
  return openAIClient({ baseURL: openAIBaseURL(o.baseURL), apiKey: o.apiKey, maxRetries: o.maxRetries ?? 2, headers: rolloutHeaders(o) });
}

/**
 * One chat completion.
 * @throws the client's errors (OpenAI.APIError, APIUserAbortError on abort); TS_ERR_UPSTREAM for an
 * answer without a choice
 */
export async function callModel(client: OpenAI, body: ChatCompletionCreateParamsNonStreaming, signal: AbortSignal): Promise<ModelCall> {
  const started = performance.now();
  const { data, response } = await client.chat.completions.create(body, { signal }).withResponse();
  const ms = Math.round(performance.now() - started);
  const choice = data?.choices?.[0];
  if (!choice?.message) throw new TurnstreamError(ErrorCodes.UPSTREAM, 'the gateway answered without a choice');
  const turnId = response.headers.get('x-turn-id') ?? String(data.id ?? '').replace(/^chatcmpl-/, '');
  const version = Number(response.headers.get('x-policy-version') ?? NaN);
  return {
    message: choice.message,
    finishReason: choice.finish_reason ?? 'stop',
    turnId,
    policyVersion: Number.isFinite(version) ? version : -1,
    ms,
  };
}
