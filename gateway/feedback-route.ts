/**
 * `POST /v1/feedback`: `{ turn_id | session_id, rating: 1 | -1, text? }` → a Feedback event
 * (through the outbox, keyed by sessionId). A turn id alone is enough for turns this gateway
 * served recently; otherwise the session id is needed (body, or `X-Session-Id`).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyInstance } from 'fastify';
import type { Feedback } from '../schemas/index.ts';
import { ErrorCodes, TurnstreamError, invalidInput } from '../streams/errors.ts';
import { header } from './turn-context.ts';
import type { TurnCapture } from './turn-capture.ts';

const MAX_TEXT = 16_384;

export function parseFeedback(
  body: unknown,
  headers: Record<string, string | string[] | undefined>,
  keyUserId: string | null,
  sessionOf: (turnId: string) => string | undefined,
): Feedback {
  if (!body || typeof body !== 'object' || Array.isArray(body)) throw invalidInput('the request body must be a JSON object');
  const b = body as Record<string, unknown>;
  for (const k of ['turn_id', 'session_id', 'text', 'user'] as const) {
    if (b[k] !== undefined && b[k] !== null && typeof b[k] !== 'string') throw invalidInput(`${k} must be a string`, k);
  }
  let turnId = (b.turn_id as string | undefined) || null;
  // Accept the response id as well (`chatcmpl-<turnId>`).
  if (turnId?.startsWith('chatcmpl-')) turnId = turnId.slice('chatcmpl-'.length);
  const text = (b.text as string | undefined) ?? null;
  if (text !== null && text.length > MAX_TEXT) throw invalidInput(`text must be at most ${MAX_TEXT} characters`, 'text');
  const rating = b.rating ?? null;
  if (rating !== null && rating !== 1 && rating !== -1) throw invalidInput('rating must be 1 or -1', 'rating');
  if (rating === null && !text) throw invalidInput('give a rating (1 or -1), a text, or both', 'rating');
  let sessionId = (b.session_id as string | undefined) || header(headers, 'x-session-id') || null;
  if (!sessionId && turnId) sessionId = sessionOf(turnId) ?? null;
  if (!sessionId) {
    if (!turnId) throw invalidInput('give turn_id or session_id', 'turn_id');
    throw new TurnstreamError(ErrorCodes.NOT_FOUND, `turn ${turnId} is not known to this gateway; send session_id too`, {
      param: 'turn_id',
    });
  }
  return {
    feedbackId: randomUUID(),
    sessionId,
    turnId,
    userId: header(headers, 'x-user-id') ?? keyUserId ?? ((b.user as string | undefined) || null),
    rating: rating as number | null,
    text,
    createdAt: Date.now(),
  };
}

export function registerFeedback(app: FastifyInstance, capture: TurnCapture): void {
  app.post('/v1/feedback', async (request, reply) => {
    const fb = parseFeedback(request.body, request.headers, request.apiKeyUserId ?? null, (t) => capture.sessionOf(t));
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
}
