/**
 * Seeded random histories for comparing the batch replay with the live assembler: imported
 * conversations (`openai-chat` lines, as a user's export) and gateway traffic (turns and feedback
 * as the gateway writes them). The same seed gives the same history, so a failure names its seed.
 */
import { mulberry32 } from '../../../../core/index.ts';
import type { ChatMessage, Feedback, Turn } from '../../../../schemas/index.ts';
import { partitioner } from '../../../../streams/index.ts';
import { chatMessage as msg } from '../../../support/chat-message.ts';
import { exampleTurn } from '../../../support/fixtures.ts';

/** mulberry32: a small seeded PRNG (core's). */
export const rng = mulberry32;

export type Rand = ReturnType<typeof rng>;
const int = (r: Rand, lo: number, hi: number) => lo + Math.floor(r() * (hi - lo + 1));
const pick = <T>(r: Rand, xs: readonly T[]): T => xs[Math.floor(r() * xs.length)];
const chance = (r: Rand, p: number) => r() < p;

const PLEASED = ['Thanks, great 👍', 'Perfect, that works!', 'ok', 'Nice, thank you.'];
const CORRECTED = ["No, that's wrong.", 'That is too long, shorter please.', 'Not what I asked, try again.', '👎'];
const QUESTIONS = ['What is Kafka?', 'Write a haiku about logs.', 'How do I list files?', 'Explain event time.', 'hi'];
const MINUTE = 60_000;

type Line = Record<string, unknown>;
type Msg = Record<string, unknown>;

export interface ImportedHistoryOptions {
  /** Conversations (lines), side lines left out. @default 8–40 */
  conversations?: number;
  /** Times start here (ms). @default 2026-03-01 */
  base?: number;
}

/**
 * An `openai-chat` file's lines: short and long conversations, pleased and corrected replies,
 * tool calls (parallel ones too), explicit ratings, side lines (heartbeats, some in a main
 * conversation's session), times per line, per message or none (the import time), identical
 * and close ones, gaps longer than an idle timeout, lines in no order of time.
 */
export function importedHistory(seed: number, o: ImportedHistoryOptions = {}): Line[] {
  const r = rng(seed);
  const base = o.base ?? Date.parse('2026-03-01T08:00:00Z');
  const n = o.conversations ?? int(r, 8, 40);
  const lines: Line[] = [];
  // A few start times shared by several conversations: identical timestamps across sessions.
  const starts = Array.from({ length: Math.max(2, Math.floor(n / 3)) }, () => base + int(r, 0, 3 * 24 * 60) * MINUTE);
  for (let k = 0; k < n; k++) {
    const start = chance(r, 0.5) ? pick(r, starts) : base + int(r, 0, 3 * 24 * 60) * MINUTE + int(r, 0, 999);
    const timing = pick(r, ['line', 'line', 'message', 'message', 'none'] as const);
    let t = start;
    const step = () => {
      // close, identical, minutes apart, or (now and then) longer than an idle timeout
      t += pick(r, [0, 0, 1, 2, 900, 15_000, 3 * MINUTE, 12 * MINUTE, 45 * MINUTE, 150 * MINUTE]);
      return new Date(t).toISOString();
    };
    const stamp = (m: Msg): Msg => (timing === 'message' ? { ...m, timestamp: step() } : m);
    const messages: Msg[] = [];
    if (chance(r, 0.7)) messages.push({ role: 'system', content: pick(r, ['You are a helpful assistant.', 'Be brief.']) });
    messages.push(stamp({ role: 'user', content: `${pick(r, QUESTIONS)} (${seed}/${k})` }));
    const turns = pick(r, [1, 1, 2, 2, 2, 3, 4, 6, 9]);
    for (let i = 0; i < turns; i++) {
      if (chance(r, 0.2)) {
        // A tool turn: the assistant calls one or two tools, their results follow.
        const calls = Array.from({ length: int(r, 1, 2) }, (_, c) => ({
          id: `call_${k}_${i}_${c}`,
          type: 'function',
          function: { name: pick(r, ['ls', 'read_file', 'search']), arguments: JSON.stringify({ path: `./${c}` }) },
        }));
        messages.push(stamp({ role: 'assistant', content: null, tool_calls: calls }));
        for (const c of calls) messages.push(stamp({ role: 'tool', tool_call_id: c.id, content: `result of ${c.function.name}` }));
      }
      const answer: Msg = { role: 'assistant', content: `answer ${i} of ${k}` };
      if (chance(r, 0.2)) {
        const fb: Record<string, unknown> = { rating: pick(r, [1, -1]) };
        if (chance(r, 0.5)) fb.text = pick(r, ['good', 'too long', 'wrong']);
        answer.feedback = fb;
      } else if (chance(r, 0.05)) answer.rating = pick(r, ['up', 'down']);
      messages.push(stamp(answer));
      // Each answer followed by the user: pleased or a correction (the last one: usually).
      if (i < turns - 1 || chance(r, 0.85))
        messages.push(stamp({ role: 'user', content: chance(r, 0.5) ? pick(r, PLEASED) : pick(r, CORRECTED) }));
    }
    const line: Line = { messages };
    if (chance(r, 0.92)) line.session_id = `imp-${seed}-${k}`;
    if (chance(r, 0.5)) line.user = pick(r, ['alice', 'bob', 'carol']);
    if (timing !== 'none') line.timestamp = new Date(start).toISOString();
    lines.push(line);
    if (chance(r, 0.12)) {
      // A side line: a heartbeat, in this conversation's session or in a session of its own.
      const side: Line = {
        turn_type: 'side',
        timestamp: new Date(start + int(r, 0, 20) * MINUTE).toISOString(),
        messages: [
          { role: 'user', content: 'HEARTBEAT' },
          { role: 'assistant', content: 'HEARTBEAT_OK' },
        ],
      };
      side.session_id = chance(r, 0.5) && line.session_id ? line.session_id : `side-${seed}-${k}`;
      lines.push(side);
    }
  }
  // In no order of time (an export by conversation id, two files appended, ...).
  for (let i = lines.length - 1; i > 0; i--) {
    const j = Math.floor(r() * (i + 1));
    [lines[i], lines[j]] = [lines[j], lines[i]];
  }
  return lines;
}

/**
 * The user's file (issue 40): 32 conversations, 43 answers each followed by the user, 11 of them
 * short two-answer ones (system, user, answer, pleased reply, answer, correction), one time per
 * line and the lines in no order of time.
 */
export function reportedHistory(seed = 40): Line[] {
  const r = rng(seed);
  const base = Date.parse('2026-03-01T08:00:00Z');
  const lines: Line[] = [];
  for (let k = 0; k < 32; k++) {
    const messages: Msg[] = [
      { role: 'system', content: 'You are a helpful assistant.' },
      { role: 'user', content: `${pick(r, QUESTIONS)} (${k})` },
      { role: 'assistant', content: `answer ${k}` },
    ];
    if (k < 11)
      messages.push(
        { role: 'user', content: pick(r, PLEASED) },
        { role: 'assistant', content: `You're welcome (${k})` },
        { role: 'user', content: pick(r, CORRECTED) },
      );
    else messages.push({ role: 'user', content: pick(r, PLEASED) });
    lines.push({ session_id: `reported-${k}`, timestamp: new Date(base + int(r, 0, 48 * 60) * MINUTE).toISOString(), messages });
  }
  return lines;
}

export interface GatewayHistoryOptions {
  /** Sessions. @default 6–30 */
  sessions?: number;
  /** When the traffic starts (ms). @default 1_790_000_000_000 */
  start?: number;
  /** The assembler's idle timeout, to make gaps just under and over it. @default 5 min */
  idleTimeoutMs?: number;
  /** The assembler's closed-session retention, to reuse session ids after it. @default 20 min */
  closedRetentionMs?: number;
}

/** A record as the gateway writes it: visible to consumers at `at` (its event time plus the way to Kafka, under 1 s). */
export type Written = { at: number } & ({ topicId: 'turns'; value: Turn } | { topicId: 'feedback'; value: Feedback });

/**
 * Gateway traffic: sessions interleaved in time, 👍/👎 naming a turn or none, given before the
 * next turn, after it within the feedback grace and after the grace; idle gaps just under and
 * over the idle timeout; sessions that end with sessionDone; session ids used again after the
 * closed-session retention; side turns; now and then two turns of a session written out of
 * order (two gateways). Ordered by when each record reaches Kafka.
 */
export function gatewayHistory(seed: number, o: GatewayHistoryOptions = {}): Written[] {
  const r = rng(seed);
  const start = o.start ?? 1_790_000_000_000;
  const idle = o.idleTimeoutMs ?? 5 * MINUTE;
  const retention = o.closedRetentionMs ?? 20 * MINUTE;
  const out: Written[] = [];
  const n = o.sessions ?? int(r, 6, 30);
  for (let k = 0; k < n; k++) {
    const sessionId = `gw-${seed}-${k}`;
    const userId = chance(r, 0.8) ? pick(r, ['alice', 'bob', 'carol']) : null;
    let t = start + int(r, 0, 10 * MINUTE);
    for (let round = 0, rounds = chance(r, 0.2) ? 2 : 1; round < rounds; round++) {
      if (round > 0) t += retention + int(r, 1, 5) * MINUTE; // the same session id, after it was forgotten
      const history: ChatMessage[] = [msg('system', 'Be brief.')];
      const turns = pick(r, [1, 2, 3, 3, 5, 8]);
      const done = chance(r, 0.4);
      for (let i = 0; i < turns; i++) {
        history.push(msg('user', i === 0 ? `${pick(r, QUESTIONS)} (${k}/${round})` : pick(r, [...PLEASED, ...CORRECTED])));
        const requestedAt = t;
        const completedAt = t + int(r, 50, 3000);
        const turnId = `${sessionId}-${round}-${i}`;
        const turn = exampleTurn({
          turnId,
          sessionId,
          userId,
          requestMessages: [...history],
          response: { content: `reply ${i} (${k}/${round})`, toolCalls: [], finishReason: 'stop' },
          requestedAt,
          completedAt,
          sessionDone: done && i === turns - 1,
          gatewayId: pick(r, ['gw-1', 'gw-2']),
        });
        history.push(msg('assistant', `reply ${i} (${k}/${round})`));
        // Two gateways: now and then a turn reaches Kafka after the next one (a quick agent loop).
        out.push({ at: completedAt + (chance(r, 0.08) ? 600 : int(r, 0, 300)), topicId: 'turns', value: turn });
        if (chance(r, 0.1)) {
          const side = exampleTurn({
            turnId: `${turnId}-side`,
            sessionId,
            userId,
            turnType: 'SIDE',
            requestMessages: [msg('user', 'HEARTBEAT')],
            response: { content: 'HEARTBEAT_OK', toolCalls: [], finishReason: 'stop' },
            requestedAt: completedAt + 10,
            completedAt: completedAt + 20,
          });
          out.push({ at: completedAt + 20 + int(r, 0, 300), topicId: 'turns', value: side });
        }
        // The user thinks: seconds, a minute, or just under / over the idle timeout.
        const think = pick(r, [300, 800, 2000, 4000, 9000, 30_000, MINUTE, idle - 2000, idle + 2000, idle + MINUTE]);
        if (chance(r, 0.35)) {
          // Feedback: before the next turn, just after it (in the grace), or long after it.
          const when = pick(r, [
            completedAt + int(r, 100, Math.max(101, think - 100)),
            completedAt + think + int(r, 0, 4000),
            completedAt + think + int(r, 6000, 60_000),
          ]);
          const named = chance(r, 0.7);
          const fb: Feedback = {
            feedbackId: `${turnId}-fb`,
            sessionId,
            turnId: named ? turnId : null,
            userId: chance(r, 0.5) ? userId : 'mallory',
            rating: pick(r, [1, -1, null]),
            text: chance(r, 0.5) ? pick(r, ['too long', 'great', 'wrong']) : 'meh',
            createdAt: when,
            actedBy: null,
          };
          out.push({ at: when + int(r, 0, 300), topicId: 'feedback', value: fb });
        }
        t = completedAt + think;
      }
    }
  }
  return out.sort((a, b) => a.at - b.at);
}

/** The partition of `key` among `partitions`, as every turnstream producer places it. */
export function partitionOf(key: string, partitions: number): number {
  const place = partitioner();
  return place({
    topic: 'turns',
    partitionMetadata: Array.from({ length: partitions }, (_, i) => ({
      partitionId: i,
      leader: 0,
      partitionErrorCode: 0,
      replicas: [0],
      isr: [0],
    })),
    message: { key, value: null },
  });
}
