/**
 * The closed set of turnstream errors. Every failure the system reports carries a stable
 * code, a `retriable` flag (retriable errors are retried with backoff, the rest go to the
 * DLQ or back to the caller) and, where there is one, the underlying cause.
 */
export const ErrorCodes = {
  /** A request or event failed validation: missing field, wrong type, out of range. */
  INVALID_INPUT: 'TS_ERR_INVALID_INPUT',
  /** Bytes could not be decoded (not Avro, unknown schema id, bad JSON). */
  DECODE: 'TS_ERR_DECODE',
  /** Authentication failed (missing or unknown API key). */
  UNAUTHORIZED: 'TS_ERR_UNAUTHORIZED',
  /** Authenticated, but not allowed: another user's turn or session, acting for another user without a service key. */
  FORBIDDEN: 'TS_ERR_FORBIDDEN',
  /** Something asked for does not exist (model, turn, session, weight version). */
  NOT_FOUND: 'TS_ERR_NOT_FOUND',
  /** Kafka, the registry or ClickHouse could not be reached or refused the call. */
  UNAVAILABLE: 'TS_ERR_UNAVAILABLE',
  /** A call took longer than its bound. */
  TIMEOUT: 'TS_ERR_TIMEOUT',
  /** At capacity (concurrent generations and queue full): retry after the advertised delay. */
  OVERLOADED: 'TS_ERR_OVERLOADED',
  /** An event or record is larger than its topic (or the broker) accepts, even after shrinking. */
  TOO_LARGE: 'TS_ERR_TOO_LARGE',
  /** An upstream engine, judge or teacher answered with an error or nonsense. */
  UPSTREAM: 'TS_ERR_UPSTREAM',
  /** Every judge vote for a pair failed. */
  JUDGE_FAILED: 'TS_ERR_JUDGE_FAILED',
  /** A checkpoint or weight file failed verification (sha256, shape, format). */
  CORRUPT_WEIGHTS: 'TS_ERR_CORRUPT_WEIGHTS',
  /** A needed program or package is missing on this machine, or a port is taken. */
  PREREQUISITE: 'TS_ERR_PREREQUISITE',
  /** The operation was cancelled (shutdown, client went away). */
  ABORTED: 'TS_ERR_ABORTED',
  /** A bug: an invariant did not hold. */
  INTERNAL: 'TS_ERR_INTERNAL',
} as const;

export type ErrorCode = (typeof ErrorCodes)[keyof typeof ErrorCodes];

const RETRIABLE_BY_DEFAULT: ReadonlySet<ErrorCode> = new Set([
  ErrorCodes.UNAVAILABLE,
  ErrorCodes.TIMEOUT,
  ErrorCodes.UPSTREAM,
  ErrorCodes.OVERLOADED,
]);

export interface TurnstreamErrorOptions {
  /** Overrides the code's default retriability. */
  retriable?: boolean;
  /** The error that caused this one. */
  cause?: unknown;
  /** For input errors: the offending field, as OpenAI's `param`. */
  param?: string;
  /** For OVERLOADED: how long the caller should wait before retrying (HTTP `Retry-After`). */
  retryAfterMs?: number;
}

/** Base class of every error turnstream raises on purpose. */
export class TurnstreamError extends Error {
  readonly code: ErrorCode;
  readonly retriable: boolean;
  readonly param: string | undefined;
  readonly retryAfterMs: number | undefined;

  constructor(code: ErrorCode, message: string, options: TurnstreamErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    this.name = 'TurnstreamError';
    this.code = code;
    this.retriable = options.retriable ?? RETRIABLE_BY_DEFAULT.has(code);
    this.param = options.param;
    this.retryAfterMs = options.retryAfterMs;
  }
}

export const invalidInput = (message: string, param?: string, cause?: unknown): TurnstreamError =>
  new TurnstreamError(ErrorCodes.INVALID_INPUT, message, { param, cause });

/** True when an error (ours or a library's) is worth retrying. */
export function isRetriable(err: unknown): boolean {
  if (err instanceof TurnstreamError) return err.retriable;
  if (err && typeof err === 'object' && 'retriable' in err) return Boolean((err as { retriable: unknown }).retriable);
  return false;
}

/** Wraps anything thrown into a TurnstreamError, keeping ours as they are. */
export function toTurnstreamError(err: unknown, fallback: ErrorCode = ErrorCodes.INTERNAL): TurnstreamError {
  if (err instanceof TurnstreamError) return err;
  const message = err instanceof Error ? err.message : String(err);
  return new TurnstreamError(fallback, message, { cause: err, retriable: isRetriable(err) || undefined });
}
