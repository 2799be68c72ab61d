/**
 * The one OpenAI client: the official `openai` package, for every call the project makes to an
 * OpenAI-compatible API (the LLM judge, the upstream teacher, the eval's pipeline mode, the gym's
 * agent). Retries stay the project's own (core/retry.ts, driven by each error's `retriable`), so
 * the client does not retry unless a caller with no retry loop of its own asks (`maxRetries`); `openAIFailure` reads what went wrong out of the package's errors, and each caller
 * words its TurnstreamError (its code, message and `retriable`) from that.
 */
import OpenAI, { APIConnectionError, APIConnectionTimeoutError, APIError, APIUserAbortError } from 'openai';

export interface OpenAIClientOptions {
  /** Base URL of the API, e.g. `http://127.0.0.1:8000/v1` (trailing slashes dropped). */
  baseURL: string;
  /** Bearer token. @default undefined (no Authorization header) */
  apiKey?: string;
  /**
   * Bound on one request until its answer's headers arrive, in ms (a caller bounds the whole
   * attempt with its own signal). @default 600_000 (the package's)
   */
  timeoutMs?: number;
  /** Headers of every request. @default {} */
  headers?: Record<string, string>;
  /** For tests and custom transports. @default globalThis.fetch */
  fetch?: typeof fetch;
  /**
   * The package's own retries (429, 5xx, a dropped connection), for a caller that has no retry
   * loop of its own: the gym's agent, whose episode is one call after another. @default 0
   */
  maxRetries?: number;
}

/** An OpenAI client that never retries and sends no credentials but `apiKey`'s. */
export function openAIClient(o: OpenAIClientOptions): OpenAI {
  return new OpenAI({
    baseURL: o.baseURL.replace(/\/+$/, ''),
    // The package wants a key; without one, its Authorization header is removed below.
    apiKey: o.apiKey || 'none',
    // Not OPENAI_ORG_ID / OPENAI_PROJECT_ID from the environment: these endpoints are not OpenAI's.
    organization: null,
    project: null,
    maxRetries: o.maxRetries ?? 0,
    ...(o.timeoutMs !== undefined ? { timeout: Math.max(1, Math.ceil(o.timeoutMs)) } : {}),
    defaultHeaders: { ...o.headers, ...(o.apiKey ? {} : { Authorization: null }) },
    ...(o.fetch ? { fetch: o.fetch } : {}),
  });
}

/** What went wrong with one call, as a caller words it. */
export type OpenAIFailure =
  /** The API answered with an error status; `body` is what it sent (as far as the package keeps it). */
  | { kind: 'status'; status: number; body: string }
  /** No answer: refused, reset, unknown host. `reason` is the network error's own message (`fetch failed`), `cause` that error. */
  | { kind: 'unreachable'; reason: string; cause: unknown }
  /** The client's own `timeoutMs` ran out. */
  | { kind: 'timeout' }
  /** The caller's signal aborted the call. */
  | { kind: 'aborted' }
  /** A 2xx answer whose body is not JSON. */
  | { kind: 'not-json'; reason: string }
  /** The answer could not be read (the connection dropped in the body) or anything else. */
  | { kind: 'unreadable'; reason: string };

/** The body of an error answer: the package keeps its `error` field when it was JSON, else its text after the status. */
function errorBody(err: APIError): string {
  if (err.error !== undefined) return JSON.stringify({ error: err.error });
  const m = /^\d+ ([\s\S]*)$/.exec(err.message);
  return m && !err.message.endsWith(' status code (no body)') ? m[1] : '';
}

/** Reads a failure out of what the client threw. */
export function openAIFailure(err: unknown): OpenAIFailure {
  if (err instanceof APIUserAbortError) return { kind: 'aborted' };
  if (err instanceof APIConnectionTimeoutError) return { kind: 'timeout' };
  if (err instanceof APIConnectionError) {
    const cause = (err as { cause?: unknown }).cause;
    return { kind: 'unreachable', reason: cause instanceof Error ? cause.message : err.message, cause: cause ?? err };
  }
  if (err instanceof APIError && typeof err.status === 'number') return { kind: 'status', status: err.status, body: errorBody(err) };
  if (err instanceof SyntaxError) return { kind: 'not-json', reason: err.message };
  return { kind: 'unreadable', reason: err instanceof Error ? err.message : String(err) };
}

/**
 * A JSON answer's value. The package parses a body sent as `application/json` and hands any other
 * body over as text, which is parsed here.
 * @throws SyntaxError when the text is not JSON
 */
export function jsonOf(data: unknown): unknown {
  return typeof data === 'string' ? JSON.parse(data) : data;
}
