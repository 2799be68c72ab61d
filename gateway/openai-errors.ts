/**
 * Errors → HTTP status and OpenAI's error shape `{ error: { message, type, code, param } }`.
 * `code` is turnstream's stable code (`TS_ERR_…`); fastify's own 4xx errors (bad JSON, body
 * too large, wrong content type) keep their status and become `invalid_request_error`s.
 */
import { ErrorCodes, TurnstreamError, type ErrorCode } from '../core/index.ts';

export interface OpenAIErrorBody {
  error: { message: string; type: string; code: string | null; param: string | null };
}

/** HTTP status of every code (the error catalogue test checks that each has one). */
export const STATUS: Record<ErrorCode, number> = {
  [ErrorCodes.INVALID_INPUT]: 400,
  [ErrorCodes.DECODE]: 400,
  [ErrorCodes.UNAUTHORIZED]: 401,
  [ErrorCodes.FORBIDDEN]: 403,
  [ErrorCodes.NOT_FOUND]: 404,
  [ErrorCodes.UNAVAILABLE]: 503,
  [ErrorCodes.TIMEOUT]: 504,
  [ErrorCodes.OVERLOADED]: 429,
  [ErrorCodes.TOO_LARGE]: 413,
  [ErrorCodes.UPSTREAM]: 502,
  [ErrorCodes.JUDGE_FAILED]: 502,
  [ErrorCodes.CORRUPT_WEIGHTS]: 500,
  [ErrorCodes.PREREQUISITE]: 500,
  [ErrorCodes.ABORTED]: 503,
  [ErrorCodes.INTERNAL]: 500,
};

function typeFor(status: number): string {
  if (status === 401) return 'authentication_error';
  if (status === 403) return 'permission_error';
  if (status === 404) return 'not_found_error';
  if (status === 429) return 'rate_limit_error';
  if (status < 500) return 'invalid_request_error';
  return status === 503 ? 'service_unavailable_error' : 'server_error';
}

/** Fastify error codes → clearer messages for API clients. */
const FASTIFY_MESSAGES: Record<string, string> = {
  FST_ERR_CTP_INVALID_JSON_BODY: 'the request body is not valid JSON',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'the request body is empty; send a JSON object',
  FST_ERR_CTP_BODY_TOO_LARGE: 'the request body is too large',
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'unsupported Content-Type; send application/json',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'the Content-Length header does not match the body',
};

export function toOpenAIError(err: unknown): { status: number; body: OpenAIErrorBody } {
  if (err instanceof TurnstreamError) {
    const status = STATUS[err.code] ?? 500;
    // OpenAI's own code for an unknown model, which clients check for.
    if (err.code === ErrorCodes.NOT_FOUND && err.param === 'model') {
      return { status, body: { error: { message: err.message, type: 'invalid_request_error', code: 'model_not_found', param: 'model' } } };
    }
    return { status, body: { error: { message: err.message, type: typeFor(status), code: err.code, param: err.param ?? null } } };
  }
  const e = err as { statusCode?: number; code?: string; message?: string };
  if (typeof e?.statusCode === 'number' && e.statusCode >= 400 && e.statusCode < 500) {
    const message = (e.code && FASTIFY_MESSAGES[e.code]) ?? e.message ?? 'bad request';
    if (e.code === 'FST_ERR_CTP_INVALID_JSON_BODY' || (e.statusCode === 400 && e.message && /JSON/.test(e.message))) {
      return {
        status: 400,
        body: { error: { message: `${message}: ${e.message}`, type: 'invalid_request_error', code: ErrorCodes.DECODE, param: null } },
      };
    }
    return {
      status: e.statusCode,
      body: { error: { message, type: typeFor(e.statusCode), code: e.code ?? ErrorCodes.INVALID_INPUT, param: null } },
    };
  }
  return {
    status: 500,
    body: { error: { message: 'internal error', type: 'server_error', code: ErrorCodes.INTERNAL, param: null } },
  };
}
