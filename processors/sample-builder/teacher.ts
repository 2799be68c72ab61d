/**
 * The frozen teacher of on-policy distillation (docs/design/algorithms.md §4): it scores the ORIGINAL
 * response tokens under the prompt with the hint appended to the last user message.
 */
import type { ChatMessage, TopKEntry } from '../../schemas/index.ts';

export interface TeacherScoreOptions {
  /** Also return the teacher's top-k ids and log-probs per response position. @default 0 (none) */
  topK?: number;
  /** The rollout: its messages (without the hint), `tools` as JSON, and the prompt tokens the engine used. */
  rollout?: { messages: readonly ChatMessage[]; toolsJson: string | null; promptTokens: number };
  signal?: AbortSignal;
}

export interface TeacherScores {
  /** log π_teacher of each response token, one per response token (empty when deferred). */
  logprobs: number[];
  /**
   * Set by a teacher that is the learner's own current policy: the hinted prompt's token ids,
   * which the learner scores with the weights it trains (Sample.teacherPromptTokens).
   */
  deferredPromptTokens?: number[];
  /** Per response position, the teacher's top-k ids and log-probs (when asked for). */
  topK?: TopKEntry[];
}

export interface Teacher {
  /** Stable id for logs and metrics. */
  readonly id: string;
  /** Scores `responseTokenIds` as the answer to `messages` (temperature 1). */
  score(messages: ChatMessage[], responseTokenIds: number[], opts?: TeacherScoreOptions): Promise<TeacherScores>;
}

/** The separator the reference uses between the user's message and the hint. */
export const HINT_HEADER = "\n\n[user's hint / instruction]\n";

/**
 * The teacher prompt: the original messages with the hint appended to the last user message as
 * `\n\n[user's hint / instruction]\n<hint>` (a user message carrying only the hint is appended
 * when there is none). The input is not modified.
 */
export function appendHint(messages: readonly ChatMessage[], hint: string): ChatMessage[] {
  const out = messages.map((m) => ({ ...m }));
  for (let i = out.length - 1; i >= 0; i--) {
    if (out[i].role === 'user') {
      out[i] = { ...out[i], content: `${out[i].content ?? ''}${HINT_HEADER}${hint}` };
      return out;
    }
  }
  out.push({ role: 'user', content: `${HINT_HEADER.trimStart()}${hint}`, name: null, toolCallId: null, toolCalls: [] });
  return out;
}
