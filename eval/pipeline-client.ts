/**
 * The eval's calls to the gateway in `--pipeline` mode: a chat completion with the session's
 * headers, its turn id and the policy version that answered, retried on a dropped connection or a
 * 429/5xx; and a 👍/👎 on a turn.
 */
import { ErrorCodes, retry, TurnstreamError, type Logger } from '../core/index.ts';

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
}

/** A network error's own reason (undici hides it under `cause`: a reset, a refused connection, a timeout). */
function reasonOf(err: unknown): string {
  const cause = (err as { cause?: { code?: string; message?: string } })?.cause;
  const msg = err instanceof Error ? err.message : String(err);
  return cause ? `${msg} (${cause.code ?? cause.message ?? String(cause)})` : msg;
}

/**
 * One call to the gateway. A dropped connection or a 429/5xx is tried again (a side turn sent twice
 * is harmless; a main turn sent twice shows up as a retried turn in its session), and every retry
 * is logged with its reason, so that a worker that does give up says why.
 */
export async function chat(
  url: string,
  messages: Array<{ role: string; content: string }>,
  headers: Record<string, string>,
  sampling: ChatSampling,
  logger: Logger,
): Promise<ChatResult> {
  const body = JSON.stringify({
    messages,
    max_tokens: sampling.maxTokens,
    temperature: sampling.temperature,
    top_p: sampling.topP,
    seed: sampling.seed,
  });
  return retry(
    async () => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json', ...headers },
        body,
      });
      if (res.status !== 200) {
        const text = await res.text();
        throw new TurnstreamError(ErrorCodes.UPSTREAM, `gateway answered ${res.status}: ${text.slice(0, 300)}`, {
          retriable: res.status === 429 || res.status >= 500,
        });
      }
      const out = (await res.json()) as { choices: Array<{ message: { content: string | null } }> };
      return {
        text: out.choices[0].message.content ?? '',
        turnId: res.headers.get('x-turn-id') ?? '',
        version: Number(res.headers.get('x-policy-version') ?? -1),
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

/** A 👍/👎 on a turn; a refusal is logged, not thrown (the interaction went on without it). */
export async function sendFeedback(
  url: string,
  headers: Record<string, string>,
  feedback: { turnId: string; sessionId: string; rating: number },
  logger: Logger,
): Promise<void> {
  const fb = await fetch(`${url}/v1/feedback`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: JSON.stringify({ turn_id: feedback.turnId, session_id: feedback.sessionId, rating: feedback.rating }),
  });
  if (fb.status !== 201) logger.warn({ session: feedback.sessionId, status: fb.status, body: await fb.text() }, 'feedback refused');
}
