/**
 * Many users, one model (ALGORITHMS.md §7): how much to trust each user's feedback.
 *
 * Two turns are *comparable* when they answer the same prompt (normalized last user message)
 * with a near-identical response (character-trigram Jaccard ≥ `similarity`). Whenever a user
 * rewards a turn that is comparable to turns other users rewarded, the user's sign is compared
 * with the sign of the others' mean reward: one agreement or one disagreement. A user's weight
 * is the Beta-smoothed agreement rate, so a new user starts near 1 − b/(a+b) and a user who
 * keeps contradicting everyone sinks towards `minWeight`. Pairs of users who disagree on most
 * of their comparable turns are reported as conflicts.
 *
 * Everything here is rebuilt from the samples topic on restart (it is a pure fold over events).
 */

export interface UserConsensusOptions {
  /** Prior agreements (Beta α). @default 4 */
  priorAgree?: number;
  /** Prior disagreements (Beta β). @default 1 */
  priorDisagree?: number;
  /** Floor of a user's weight. @default 0.05 */
  minWeight?: number;
  /** Trigram Jaccard at or above which two responses to one prompt are the same turn. @default 0.8 */
  similarity?: number;
  /** Responses remembered per prompt (oldest forgotten first). @default 64 */
  maxResponsesPerPrompt?: number;
  /** Prompts remembered (oldest forgotten first). @default 10000 */
  maxPrompts?: number;
  /** Comparisons two users need before they can be reported as a conflict. @default 3 */
  minConflictComparisons?: number;
  /** Disagreement rate at or above which two users conflict. @default 0.6 */
  conflictRate?: number;
}

export interface RatedTurn {
  userId: string | null;
  /** The prompt's last user message (or any text identifying the request). */
  prompt: string;
  response: string;
  /** −1, 0 or +1 (0 carries no opinion and is not compared). */
  reward: number;
}

export interface UserStats {
  userId: string;
  samples: number;
  meanReward: number;
  agreements: number;
  disagreements: number;
  weight: number;
}

export interface Conflict {
  users: [string, string];
  comparisons: number;
  disagreementRate: number;
}

interface ResponseEntry {
  grams: Set<string>;
  /** userId → rewards given to this response. */
  byUser: Map<string, number[]>;
}

const ANONYMOUS = '(anonymous)';

export const normalizePrompt = (s: string): string =>
  s
    .toLowerCase()
    .replace(/[^\p{L}\p{N}\s]/gu, ' ')
    .replace(/\s+/g, ' ')
    .trim();

function trigrams(s: string): Set<string> {
  const t = ` ${normalizePrompt(s)} `;
  const out = new Set<string>();
  for (let i = 0; i + 3 <= t.length; i++) out.add(t.slice(i, i + 3));
  return out;
}

function jaccard(a: Set<string>, b: Set<string>): number {
  if (a.size === 0 && b.size === 0) return 1;
  let inter = 0;
  for (const g of a) if (b.has(g)) inter++;
  return inter / (a.size + b.size - inter);
}

const mean = (xs: number[]) => xs.reduce((s, x) => s + x, 0) / xs.length;

export class UserConsensus {
  private readonly o: Required<UserConsensusOptions>;
  private readonly prompts = new Map<string, ResponseEntry[]>();
  private readonly users = new Map<string, { samples: number; rewardSum: number; agree: number; disagree: number }>();
  private readonly pairs = new Map<string, { comparisons: number; disagreements: number }>();

  constructor(options: UserConsensusOptions = {}) {
    this.o = {
      priorAgree: options.priorAgree ?? 4,
      priorDisagree: options.priorDisagree ?? 1,
      minWeight: options.minWeight ?? 0.05,
      similarity: options.similarity ?? 0.8,
      maxResponsesPerPrompt: options.maxResponsesPerPrompt ?? 64,
      maxPrompts: options.maxPrompts ?? 10000,
      minConflictComparisons: options.minConflictComparisons ?? 3,
      conflictRate: options.conflictRate ?? 0.6,
    };
  }

  /** Folds one rated turn in and returns the user's weight after it. */
  observe(turn: RatedTurn): number {
    const user = turn.userId ?? ANONYMOUS;
    const u = this.users.get(user) ?? { samples: 0, rewardSum: 0, agree: 0, disagree: 0 };
    u.samples++;
    u.rewardSum += turn.reward;
    this.users.set(user, u);

    const key = normalizePrompt(turn.prompt);
    let responses = this.prompts.get(key);
    if (!responses) {
      if (this.prompts.size >= this.o.maxPrompts) this.prompts.delete(this.prompts.keys().next().value as string);
      responses = [];
      this.prompts.set(key, responses);
    }
    const grams = trigrams(turn.response);
    let entry = responses.find((r) => jaccard(r.grams, grams) >= this.o.similarity);
    if (!entry) {
      entry = { grams, byUser: new Map() };
      responses.push(entry);
      if (responses.length > this.o.maxResponsesPerPrompt) responses.shift();
    }

    if (turn.reward !== 0) {
      const others = [...entry.byUser].filter(([id]) => id !== user);
      const otherRewards = others.flatMap(([, rs]) => rs).filter((r) => r !== 0);
      if (otherRewards.length > 0) {
        const consensus = Math.sign(mean(otherRewards));
        if (consensus !== 0) {
          if (consensus === Math.sign(turn.reward)) u.agree++;
          else u.disagree++;
        }
      }
      for (const [other, rs] of others) {
        const theirs = Math.sign(mean(rs));
        if (theirs === 0) continue;
        const k = [user, other].sort().join('\u0000');
        const p = this.pairs.get(k) ?? { comparisons: 0, disagreements: 0 };
        p.comparisons++;
        if (theirs !== Math.sign(turn.reward)) p.disagreements++;
        this.pairs.set(k, p);
      }
    }
    const mine = entry.byUser.get(user) ?? [];
    mine.push(turn.reward);
    entry.byUser.set(user, mine);
    return this.weight(turn.userId);
  }

  /** How much this user's feedback counts, in [minWeight, 1]. */
  weight(userId: string | null): number {
    const u = this.users.get(userId ?? ANONYMOUS);
    const a = this.o.priorAgree + (u?.agree ?? 0);
    const b = this.o.priorDisagree + (u?.disagree ?? 0);
    return Math.max(this.o.minWeight, a / (a + b));
  }

  stats(): UserStats[] {
    return [...this.users]
      .map(([userId, u]) => ({
        userId,
        samples: u.samples,
        meanReward: u.samples ? u.rewardSum / u.samples : 0,
        agreements: u.agree,
        disagreements: u.disagree,
        weight: this.weight(userId === ANONYMOUS ? null : userId),
      }))
      .sort((x, y) => x.userId.localeCompare(y.userId));
  }

  /** Users who push the model in opposite directions on comparable turns. */
  conflicts(): Conflict[] {
    const out: Conflict[] = [];
    for (const [k, p] of this.pairs) {
      if (p.comparisons < this.o.minConflictComparisons) continue;
      const rate = p.disagreements / p.comparisons;
      if (rate >= this.o.conflictRate) out.push({ users: k.split('\u0000') as [string, string], comparisons: p.comparisons, disagreementRate: rate });
    }
    return out.sort((x, y) => y.disagreementRate - x.disagreementRate || y.comparisons - x.comparisons);
  }
}
