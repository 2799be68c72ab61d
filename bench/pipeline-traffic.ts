/**
 * Synthetic conversations for the pipeline benchmark: sessions of main turns whose requests carry
 * the whole history (as OpenClaw and the OpenAI SDK send it), token ids and log-probs like the
 * built-in engine's, and a next user message the embedded judge scores +1, so every main turn
 * becomes exactly one sample (the last one of a session a masked one).
 */
import { randomUUID } from 'node:crypto';
import type { ChatMessage, Turn } from '../schemas/index.ts';

const msg = (role: string, content: string): ChatMessage => ({ role, content, name: null, toolCallId: null, toolCalls: [] });
const ids = (n: number, seed: number): number[] => Array.from({ length: n }, (_, i) => (seed * 31 + i * 7) % 256);

const QUESTIONS = [
  'How do I reverse a list in Python?',
  'Thanks, that works 👍 — and how do I sort it?',
  'Great, thank you! Can it sort descending too?',
];

/** One turn: `history` is the request (system + alternating user/assistant), `at` its request time. */
export function syntheticTurn(sessionId: string, history: ChatMessage[], index: number, at: number, over: Partial<Turn> = {}): Turn {
  const reply = `Answer ${index}: use sorted(xs, reverse=True) — it returns a new list and keeps xs as it is.`;
  const promptLen = 40 + history.length * 24;
  const responseLen = 24;
  return {
    turnId: randomUUID(),
    sessionId,
    sessionSource: 'HEADER',
    userId: `user-${sessionId.length % 7}`,
    turnType: 'MAIN',
    sessionDone: false,
    requestedAt: at,
    completedAt: at + 5,
    model: 'turnstream-tiny',
    policyModelId: 'turnstream-tiny',
    policyVersion: 0,
    requestMessages: history,
    toolsJson: null,
    response: { content: reply, toolCalls: [], finishReason: 'stop' },
    promptTokenIds: ids(promptLen, index),
    responseTokenIds: ids(responseLen, index + 1),
    responseLogprobs: Array.from({ length: responseLen }, (_, i) => -0.05 - (i % 5) * 0.1),
    tokenized: true,
    exactLogprobs: true,
    promptTruncatedTokens: 0,
    sampling: { temperature: 0.7, topP: 1, maxTokens: 64, seed: null, stop: [] },
    usage: { promptTokens: promptLen, completionTokens: responseLen, totalTokens: promptLen + responseLen },
    latencyMs: 5,
    gatewayId: 'bench',
    ...over,
  };
}

/**
 * `turns` main turns of one session; turn i is requested at `at(i)`; the last one ends the
 * session. Every user message after the first thanks the assistant (judged +1).
 */
export function syntheticSession(sessionId: string, turns: number, at: (i: number) => number): Turn[] {
  const history: ChatMessage[] = [msg('system', 'You are a concise programming assistant.')];
  const out: Turn[] = [];
  for (let i = 0; i < turns; i++) {
    history.push(msg('user', QUESTIONS[Math.min(i, 1 + (i % 2))]));
    const t = syntheticTurn(sessionId, [...history], i, at(i), { sessionDone: i === turns - 1 });
    out.push(t);
    history.push(msg('assistant', t.response.content!));
  }
  return out;
}

/** A side turn (a heartbeat): activity only, never paired. Used to move stream time forward. */
export function heartbeat(sessionId: string, at: number): Turn {
  return syntheticTurn(sessionId, [msg('user', 'HEARTBEAT')], 0, at, { turnType: 'SIDE', responseTokenIds: [], responseLogprobs: [] });
}
