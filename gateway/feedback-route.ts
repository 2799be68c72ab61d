/**
 * `POST /v1/feedback`: `{ turn_id | session_id, rating: 1 | -1, text? }` → a Feedback event
 * (through the outbox, keyed by sessionId).
 *
 * - `turn_id` must name a turn the gateway knows (gateway/ownership.ts): else 404, with or
 *   without a session id. Its session is the turn's; a different `session_id` is a 400.
 * - `session_id` alone rates the session's latest turn. With API keys on, the session must be
 *   known (404) and the caller's own (403); with auth off it is taken at its word.
 * - With API keys on, the rater is the key's user and the turn or session must be theirs (403);
 *   only a service key may rate for another user (`X-User-Id` / `user`), recorded in `actedBy`.
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync } from 'fastify';
import type { Feedback } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError, invalidInput } from '../core/index.ts';
import { actAs, OPEN_CALLER, type Caller } from './auth.ts';
import { wellFormed } from './content.ts';
import { forbidden, type Ownership } from './ownership.ts';
import { checkId } from './turn-context.ts';
import { header, type HeaderBag } from './request-values.ts';
import type { TurnCapture } from './turn-capture.ts';

const MAX_TEXT = 16_384;

export function parseFeedback(body: unknown, headers: HeaderBag, caller: Caller, ownership: Ownership): Feedback {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalidInput('the request body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of ['turn_id', 'session_id', 'text', 'user'] as const) {
    if (b[k] !== undefined && b[k] !== null && typeof b[k] !== 'string') throw invalidInput(`${k} must be a string`, k);
    if (typeof b[k] === 'string') wellFormed(b[k], k);
  }
  let turnId = (b.turn_id as string | undefined) || null;
  // Accept the response id as well (`chatcmpl-<turnId>`).
  if (turnId?.startsWith('chatcmpl-')) turnId = turnId.slice('chatcmpl-'.length);
  const text = (b.text as string | undefined) ?? null;
  if (text !== null && text.length > MAX_TEXT) throw invalidInput(`text must be at most ${MAX_TEXT} characters`, 'text');
  const rating = b.rating ?? null;
  if (rating !== null && rating !== 1 && rating !== -1) throw invalidInput('rating must be 1 or -1', 'rating');
  if (rating === null && !text) throw invalidInput('give a rating (1 or -1), a text, or both', 'rating');
  const hUser = header(headers, 'x-user-id');
  const named = hUser ? checkId(hUser, 'X-User-Id') : (b.user as string | undefined) || null;
  const { userId, actedBy } = actAs(caller, named, hUser ? 'X-User-Id' : 'user');
  const givenSession = (b.session_id as string | undefined) || header(headers, 'x-session-id') || null;
  if (givenSession) checkId(givenSession, 'session_id');

  let sessionId: string;
  if (turnId) {
    const known = ownership.turn(turnId);
    if (!known) {
      throw new TurnstreamError(
        ErrorCodes.NOT_FOUND,
        `turn ${turnId} is not known to this gateway (it knows the turns served recently, by any instance when session sharing is on)`,
        { param: 'turn_id' },
      );
    }
    if (givenSession && givenSession !== known.sessionId)
      throw invalidInput(`turn ${turnId} is not in session ${givenSession}`, 'session_id');
    if (caller.enforced && known.userId !== userId) throw forbidden(`turn ${turnId} belongs to another user`, 'turn_id');
    sessionId = known.sessionId;
  } else {
    if (!givenSession) throw invalidInput('give turn_id or session_id', 'turn_id');
    if (caller.enforced) {
      const owner = ownership.owner(givenSession);
      if (owner === undefined)
        throw new TurnstreamError(ErrorCodes.NOT_FOUND, `session ${givenSession} is not known to this gateway`, { param: 'session_id' });
      if (owner !== userId) throw forbidden(`session ${givenSession} belongs to another user`, 'session_id');
    }
    sessionId = givenSession;
  }
  return { feedbackId: randomUUID(), sessionId, turnId, userId, rating: rating as number | null, text, createdAt: Date.now(), actedBy };
}

export interface FeedbackRouteDeps {
  /** Records the feedback and knows who owns which turn and session. */
  capture: TurnCapture;
}

/** The feedback route as a fastify plugin: `app.register(feedbackRoute, { capture })`. */
export const feedbackRoute: FastifyPluginAsync<FeedbackRouteDeps> = async (app, { capture }) => {
  app.post('/v1/feedback', async (request, reply) => {
    const fb = parseFeedback(request.body, request.headers, request.caller ?? OPEN_CALLER, capture.ownership);
    await capture.captureFeedback(fb);
    reply.code(201);
    return {
      id: fb.feedbackId,
      object: 'feedback',
      turn_id: fb.turnId,
      session_id: fb.sessionId,
      created: Math.floor(fb.createdAt / 1000),
    };
  });
};
