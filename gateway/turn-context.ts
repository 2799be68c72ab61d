/**
 * Who and what a call is: session id, turn type, user id, session end. Headers win over body
 * fields (`X-Session-Id` > `session_id`, `X-Turn-Type` > `turn_type`, `X-Session-Done` >
 * `session_done`, `X-User-Id` > OpenAI `user`). With API keys on, the user is the key's user
 * and only a service key may name another (gateway/auth.ts).
 */
import type { SessionSource, TurnType } from '../schemas/index.ts';
import { invalidInput } from '../core/index.ts';
import { actAs, OPEN_CALLER, type Caller } from './auth.ts';
import type { ChatRequest } from './chat-request.ts';
import { header, parseTruthy, type HeaderBag } from './request-values.ts';

export interface TurnContext {
  /** null when the call named no session (then it is inferred or generated). */
  sessionId: string | null;
  sessionSource: Extract<SessionSource, 'HEADER' | 'BODY'> | null;
  turnType: TurnType;
  userId: string | null;
  /** The service that acted for `userId`, when a service key named the user. */
  actedBy: string | null;
  sessionDone: boolean;
}

/** `main`/`side` (any case) → MAIN/SIDE; anything else is a 400. */
export function parseTurnType(v: string, param: string): TurnType {
  const s = v.trim().toLowerCase();
  if (s === 'main') return 'MAIN';
  if (s === 'side') return 'SIDE';
  throw invalidInput(`${param} must be "main" or "side", got ${JSON.stringify(v)}`, param);
}

const MAX_ID = 256;
export function checkId(v: string, param: string): string {
  if (v.length > MAX_ID) throw invalidInput(`${param} must be at most ${MAX_ID} characters`, param);
  return v;
}

export interface TurnContextOptions {
  /** Turn type when the call names none. @default 'main' */
  defaultTurnType?: 'main' | 'side';
  /** Who is calling (auth off when absent). */
  caller?: Caller;
}

export function resolveTurnContext(headers: HeaderBag, req: ChatRequest, opts: TurnContextOptions = {}): TurnContext {
  const hSession = header(headers, 'x-session-id');
  let sessionId: string | null = null;
  let sessionSource: TurnContext['sessionSource'] = null;
  if (hSession) {
    sessionId = checkId(hSession, 'X-Session-Id');
    sessionSource = 'HEADER';
  } else if (req.bodySessionId) {
    sessionId = checkId(req.bodySessionId, 'session_id');
    sessionSource = 'BODY';
  }
  const hType = header(headers, 'x-turn-type');
  const turnType = hType
    ? parseTurnType(hType, 'X-Turn-Type')
    : req.bodyTurnType
      ? parseTurnType(req.bodyTurnType, 'turn_type')
      : (opts.defaultTurnType ?? 'main') === 'side'
        ? 'SIDE'
        : 'MAIN';
  const hDone = headers['x-session-done'];
  const sessionDone =
    hDone !== undefined ? parseTruthy(Array.isArray(hDone) ? hDone[0] : hDone, 'X-Session-Done') : parseTruthy(req.bodySessionDone);
  const hUser = header(headers, 'x-user-id');
  const named = hUser ? checkId(hUser, 'X-User-Id') : req.user;
  const { userId, actedBy } = actAs(opts.caller ?? OPEN_CALLER, named, hUser ? 'X-User-Id' : 'user');
  return { sessionId, sessionSource, turnType, userId, actedBy, sessionDone };
}
