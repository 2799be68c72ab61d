/**
 * The embedded judge: no model server. Each piece of evidence in a pair gives one vote, and the
 * pair's score is taken by precedence (the most explicit signal wins), not by majority:
 *
 * 1. a feedback rating (👍 = 1, 👎 = -1; the latest rated feedback wins);
 * 2. a feedback text: a correction → -1, else its sentiment;
 * 3. the user's reply: a correction or redo cue ("no,", "that's wrong", "try again", "I said…")
 *    → -1, else its sentiment (AFINN-165 + emoji) mapped to 1/0/-1 by thresholds;
 * 4. tool results: any error (non-zero exit code, error flag, "error", "Traceback") → -1, all
 *    successful → 1;
 * 5. an environment message that reports an error → -1.
 *
 * A correction (or a 👎 with text) also yields a hint in the user's own words for OPD ("No, that's
 * too long" → "Keep the answer short."), so OPD and combined samples exist without a model server.
 * Sentences that try to instruct the model beyond the correction ("ignore previous
 * instructions…") are left out of it (hint-guard.ts).
 */
import type { FeedbackEvidence, Judgement, TurnPair, Vote } from '../../schemas/index.ts';
import { makeJudgement, type Judge, type JudgeCallOptions, type JudgeMode } from './judge.ts';
import { guardHint } from './hint-guard.ts';
import { MIN_HINT_LENGTH } from './majority-vote.ts';
import { classifyToolResult } from './tool-result.ts';
import { hintFromCorrection, isCorrection, sentimentScore, type SentimentThresholds } from './user-reply.ts';

export interface EmbeddedJudgeOptions {
  /** `rl` leaves hints out; `opd` and `combined` keep both score and hint. @default 'combined' */
  mode?: JudgeMode;
  /** Sentiment → score thresholds. @default see SentimentThresholds */
  sentiment?: SentimentThresholds;
  /** Judge id in judgements. @default 'embedded' */
  id?: string;
}

interface Verdict {
  score: 1 | 0 | -1;
  hint: string | null;
}

function readText(text: string, thresholds: SentimentThresholds | undefined, negativeContext = false): Verdict {
  if (isCorrection(text)) return { score: -1, hint: hintFromCorrection(text) };
  const s = sentimentScore(text, thresholds).score;
  return { score: s, hint: negativeContext ? hintFromCorrection(text) : null };
}

// A candidate whose hint is all injected instruction gives way to the next one.
const usable = (hint: string | null): string | null => (hint && hint.length > MIN_HINT_LENGTH ? guardHint(hint) : null);

export class EmbeddedJudge implements Judge {
  readonly id: string;
  readonly local = true;
  private readonly mode: JudgeMode;
  private readonly thresholds: SentimentThresholds | undefined;

  constructor(options: EmbeddedJudgeOptions = {}) {
    this.id = options.id ?? 'embedded';
    this.mode = options.mode ?? 'combined';
    this.thresholds = options.sentiment;
  }

  /** The verdict of the pair and every vote behind it. Pure. */
  evaluate(pair: TurnPair): { votes: Vote[]; score: number; hint: string | null } {
    // Candidates in precedence order; the first with a non-zero score decides.
    const ranked: Array<Verdict & { rank: number }> = [];
    const votes: Vote[] = [];
    const add = (rank: number, v: Verdict): void => {
      votes.push({ index: votes.length, score: v.score, hint: v.hint, latencyMs: 0, error: null, attempts: 1 });
      ranked.push({ ...v, rank });
    };

    const byTime = [...pair.feedback].sort((a, b) => a.createdAt - b.createdAt);
    const rated = byTime.filter((f): f is FeedbackEvidence & { rating: number } => f.rating !== null && f.rating !== 0);
    for (const f of byTime) {
      const text = f.text?.trim() ?? '';
      if (f.rating !== null && f.rating !== 0) {
        // The latest rating outranks earlier ones.
        const latest = f === rated[rated.length - 1];
        add(latest ? 0 : 1, { score: f.rating > 0 ? 1 : -1, hint: f.rating < 0 && text ? hintFromCorrection(text) : null });
      } else if (text) {
        add(2, readText(text, this.thresholds));
      }
    }
    for (const item of pair.nextState) {
      if (item.role === 'USER' && item.content.trim()) add(3, readText(item.content, this.thresholds));
    }
    const tools = pair.nextState.filter((i) => i.role === 'TOOL');
    if (tools.length > 0) add(4, { score: tools.some((t) => classifyToolResult(t.content) === 'error') ? -1 : 1, hint: null });
    for (const item of pair.nextState) {
      if (item.role === 'ENVIRONMENT' && classifyToolResult(item.content) === 'error') add(5, { score: -1, hint: null });
    }

    ranked.sort((a, b) => a.rank - b.rank);
    const score = ranked.find((v) => v.score !== 0)?.score ?? 0;
    const hint = this.mode === 'rl' ? null : (ranked.map((v) => usable(v.hint)).find((h) => h !== null) ?? null);
    return { votes, score, hint };
  }

  async judge(pair: TurnPair, opts: JudgeCallOptions = {}): Promise<Judgement> {
    const { votes, score, hint } = this.evaluate(pair);
    return makeJudgement(pair, this.id, votes, score, hint, opts.now ?? Date.now());
  }
}

export const createEmbeddedJudge = (options?: EmbeddedJudgeOptions): EmbeddedJudge => new EmbeddedJudge(options);
