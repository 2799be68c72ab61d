/**
 * The eval's calls to the gateway in `--pipeline` mode, through the official `openai` client
 * (core/openai-client.ts): a chat completion with the session's headers, its turn id and the
 * policy version that answered, retried (core/retry.ts) on a dropped connection or a 429/5xx; and
 * a 👍/👎 on a turn (the gateway's own route, not OpenAI's).
 */
import type OpenAI from 'openai';
import type { ChatCompletionCreateParamsNonStreaming, ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import { ErrorCodes, retry, TurnstreamError, type Logger } from '../core/index.ts';
import { openAIClient, openAIFailure } from '../core/openai-client.ts';

/** What the gateway answered: the reply, its turn id (`X-Turn-Id`) and version (`X-Policy-Version`, −1 when absent). */
export interface ChatResult {
  text: string;
  turnId: string;
  version: number;
}

/** How one call samples. */
export interface ChatSampling {
  maxTokens: number;
  temperature: number;
  topP?: number;
  seed?: number;
  /** The model to answer with (`id@N` pins version N). @default '' (the gateway's current version) */
  model?: string;
}

/** One run's gateway, as the personas and the scorer talk to it. */
export interface EvalGatewayClient {
  /** One chat completion; `headers` carry the session, user and turn type. */
  chat(messages: ChatCompletionMessageParam[], headers: Record<string, string>, sampling: ChatSampling): Promise<ChatResult>;
  /** A 👍/👎 on a turn; a refusal is logged, not thrown (the interaction goes on without it). */
  feedback(headers: Record<string, string>, feedback: { turnId: string; sessionId: string; rating: number }): Promise<void>;
}

/** The client of the gateway at `url` (no API key: the eval's gateways have none). */
export function evalGatewayClient(url: string, logger: Logger): EvalGatewayClient {
  const client = openAIClient({ baseURL: `${url}/v1` });
  return {
    chat: (messages, headers, sampling) => chat(client, messages, headers, sampling, logger),
    feedback: async (headers, fb) => {
      const res = await fetch(`${url}/v1/feedback`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body: JSON.stringify({ turn_id: fb.turnId, session_id: fb.sessionId, rating: fb.rating }),
      });
      if (res.status !== 201) logger.warn({ session: fb.sessionId, status: res.status, body: await res.text() }, 'feedback refused');
    },
  };
}

/** A network error's own reason (undici hides it under `cause`: a reset, a refused connection, a timeout). */
function reasonOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const msg = err instanceof Error ? err.message : String(err);
  return cause ? `${msg} (${cause.code ?? cause.message ?? String(cause)})` : msg;
}

/**
 * What a failed attempt throws: an error status as TS_ERR_UPSTREAM (retriable on 429 and 5xx); a
 * dropped connection as the network's own TypeError (retried); anything else as the client threw it.
 */
function attemptError(err: unknown): unknown {
  const f = openAIFailure(err);
  if (f.kind === 'status')
    return new TurnstreamError(ErrorCodes.UPSTREAM, `gateway answered ${f.status}: ${f.body.slice(0, 300)}`, {
      retriable: f.status === 429 || f.status >= 500,
    });
  return f.kind === 'unreachable' ? f.cause : err;
}

/**
 * One call to the gateway. A dropped connection or a 429/5xx is tried again (a side turn sent twice
 * is harmless; a main turn sent twice shows up as a retried turn in its session), and every retry
 * is logged with its reason, so that a worker that does give up says why.
 */
async function chat(
  client: OpenAI,
  messages: ChatCompletionMessageParam[],
  headers: Record<string, string>,
  sampling: ChatSampling,
  logger: Logger,
): Promise<ChatResult> {
  const params: ChatCompletionCreateParamsNonStreaming = {
    // No model: the gateway's current one ('' is what it reads an absent name as).
    model: sampling.model ?? '',
    messages,
    max_tokens: sampling.maxTokens,
    temperature: sampling.temperature,
    top_p: sampling.topP,
    seed: sampling.seed,
  };
  return retry(
    async () => {
      const { data, response } = await client.chat.completions
        .create(params, { headers })
        .withResponse()
        .catch((err: unknown) => {
          throw attemptError(err);
        });
      return {
        text: data.choices[0].message.content ?? '',
        turnId: response.headers.get('x-turn-id') ?? '',
        version: Number(response.headers.get('x-policy-version') ?? -1),
      };
    },
    {
      attempts: 4,
      baseMs: 1000,
      retryIf: (err) => (err instanceof TurnstreamError ? err.retriable : err instanceof TypeError),
      onRetry: (err, attempt) =>
        logger.warn({ session: headers['x-session-id'], attempt, reason: reasonOf(err) }, 'gateway call failed, trying again'),
    },
  ).catch((err: unknown) => {
    throw new TurnstreamError(ErrorCodes.UPSTREAM, `gateway call for ${headers['x-session-id']} failed: ${reasonOf(err)}`, {
      cause: err,
    });
  });
}
