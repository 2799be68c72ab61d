/**
 * Many users, one model (docs/design/algorithms.md §7): how much to trust each user's feedback.
 *
 * Users are compared on WHAT their feedback rewards, so turns that are similar in kind (not
 * identical) are comparable — in private chats no two users ever rate the same reply.
 *
 * - **Preference vectors.** Every rated response becomes a cheap unit text vector
 *   (`responseFeatures`: hashed character trigrams and words, how it ends, length / sentence
 *   buckets). Each user keeps decayed sums of the vectors of what they rewarded and of what they
 *   punished; their preference is mean(rewarded) − mean(punished) (Rocchio; a side with no turns
 *   counts as 0, so a user who only rewards pushes towards what they rewarded). A user's
 *   *agreement* is the cosine between their preference and the others' consensus: the sum of the
 *   others' unit preferences, each weighted by its rated-turn count (and, in a second pass, by
 *   that user's weight from the first, so a contrary user counts less in everyone else's
 *   consensus). The agreement maps to a value `f = clamp(½ + cos / (2·agreementScale), 0, 1)` that counts
 *   `evidencePerTurn × min(own rated turns, others' rated turns)` times.
 * - **Exact turns (stronger, optional).** Two turns are the same turn when they answer the same
 *   prompt (normalized last user message) with a near-identical response (character-trigram
 *   Jaccard ≥ `similarity`): rating one the others rated is one agreement (counts once at 1) or
 *   one disagreement (once at 0) with the sign of their mean reward.
 * - **Weight** = (priorAgree + agreements + e·f) / (priorAgree + priorDisagree + agreements +
 *   disagreements + e), floored at `minWeight`: a new user starts at the prior
 *   priorAgree/(priorAgree+priorDisagree) and moves as evidence accrues.
 * - **Conflicts**: pairs of users whose preference vectors are opposed (cosine ≤
 *   `conflictCosine`, both with ≥ `minConflictEvidence` rated turns) or who disagree on most of
 *   their exact comparable turns.
 *
 * Rewards of 0 carry no opinion (they only count as samples). Memory is bounded (users, prompts,
 * responses per prompt and exact-turn pairs are each capped, oldest forgotten first) and
 * everything is a pure fold over samples (a restarted learner folds the samples its group had
 * committed back in before it goes on, trainer/learner.ts). The samples
 * carry one reward (the judge's verdict, itself read from the user's feedback), not the user's
 * and the judge's opinions apart, so the judge cannot be a separate voice here.
 */
import { withDefaults } from '../core/index.ts';

export interface UserConsensusOptions {
  /** Prior agreements (Beta α). @default 4 */
  priorAgree?: number;
  /** Prior disagreements (Beta β). @default 1 */
  priorDisagree?: number;
  /** Floor of a user's weight. @default 0.05 */
  minWeight?: number;
  /** Compare users' preference vectors (false: exact turns only, the former method). @default true */
  preferences?: boolean;
  /** Length of the response vectors (24 structural slots + hashed text features). @default 512 */
  dimensions?: number;
  /** A user's rated turns after which an old turn counts half in their preference. @default 256 */
  halfLife?: number;
  /** Cosine with the consensus at which f reaches 1 (and −scale: 0). @default 0.5 */
  agreementScale?: number;
  /** Weight of one rated turn of preference evidence (an exact comparison counts 1). @default 0.5 */
  evidencePerTurn?: number;
  /** Users remembered (least recently seen forgotten first). @default 4096 */
  maxUsers?: number;
  /** Rated turns each of two users needs before their vectors can make a conflict. @default 8 */
  minConflictEvidence?: number;
  /** Preference cosine at or below which two users conflict. @default -0.25 */
  conflictCosine?: number;
  /** Users (most evidence first) whose preference vectors are compared pairwise for conflicts. @default 64 */
  maxConflictUsers?: number;
  /** Trigram Jaccard at or above which two responses to one prompt are the same turn. @default 0.8 */
  similarity?: number;
  /** Responses remembered per prompt (oldest forgotten first). @default 64 */
  maxResponsesPerPrompt?: number;
  /** Prompts remembered (oldest forgotten first). @default 10000 */
  maxPrompts?: number;
  /** Exact-turn user pairs remembered (oldest forgotten first). @default 100000 */
  maxPairs?: number;
  /** Exact comparisons two users need before they can be reported as a conflict. @default 3 */
  minConflictComparisons?: number;
  /** Exact-turn disagreement rate at or above which two users conflict. @default 0.6 */
  conflictRate?: number;
}

/** What a {@link UserConsensus} uses where its options say nothing (the `@default`s above). */
export const USER_CONSENSUS_DEFAULTS: Readonly<Required<UserConsensusOptions>> = Object.freeze({
  priorAgree: 4,
  priorDisagree: 1,
  minWeight: 0.05,
  preferences: true,
  dimensions: 512,
  halfLife: 256,
  agreementScale: 0.5,
  evidencePerTurn: 0.5,
  maxUsers: 4096,
  minConflictEvidence: 8,
  conflictCosine: -0.25,
  maxConflictUsers: 64,
  similarity: 0.8,
  maxResponsesPerPrompt: 64,
  maxPrompts: 10000,
  maxPairs: 100000,
  minConflictComparisons: 3,
  conflictRate: 0.6,
});

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
  /** Exact comparable turns on which the user agreed / disagreed with the others. */
  agreements: number;
  disagreements: number;
  /** Decayed count of rated (non-zero) turns in the user's preference vector. */
  ratedTurns: number;
  /** Cosine between the user's preference and the others' consensus (null: no opinion yet). */
  agreement: number | null;
  weight: number;
}

export interface Conflict {
  users: [string, string];
  /** Exact comparable turns the two rated (0 when found by their preference vectors only). */
  comparisons: number;
  /** Disagreement rate on those turns (0 when there were none). */
  disagreementRate: number;
  /** Cosine between the two users' preference vectors (null: not enough evidence to compare). */
  similarity: number | null;
}

interface ResponseEntry {
  grams: Set<string>;
  /** userId → rewards given to this response. */
  byUser: Map<string, number[]>;
}

interface UserState {
  samples: number;
  rewardSum: number;
  agree: number;
  disagree: number;
  /** Decayed sums of the vectors of rewarded / punished turns, and their decayed counts. */
  pos: Float32Array;
  neg: Float32Array;
  nPos: number;
  nNeg: number;
  /** Unit preference (null: none), refreshed lazily. */
  unit: Float32Array | null;
  agreement: number | null;
  /** min(own, others') rated turns behind `agreement`. */
  overlap: number;
  weight: number;
}

const ANONYMOUS = '(anonymous)';
const STRUCT = 24;

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

/** FNV-1a, then a murmur finalizer. */
function hash(s: string, seed: number): number {
  let h = (0x811c9dc5 ^ seed) >>> 0;
  for (let i = 0; i < s.length; i++) h = Math.imul(h ^ s.charCodeAt(i), 0x01000193);
  h ^= h >>> 16;
  h = Math.imul(h, 0x85ebca6b);
  h ^= h >>> 13;
  h = Math.imul(h, 0xc2b2ae35);
  return (h ^ (h >>> 16)) >>> 0;
}

/** Adds `v` at a signed hashed slot of [0, n) (the sign halves collisions' bias). */
function addHashed(out: Float32Array, n: number, key: string, seed: number, v: number): void {
  const h = hash(key, seed);
  out[h % n] += h & 0x80000000 ? -v : v;
}

function normalizeRange(x: Float32Array, from: number, to: number, scale: number): void {
  let s = 0;
  for (let i = from; i < to; i++) s += x[i] * x[i];
  if (s === 0) return;
  const k = scale / Math.sqrt(s);
  for (let i = from; i < to; i++) x[i] *= k;
}

const bucket = (x: number, edges: readonly number[]): number => {
  let i = 0;
  while (i < edges.length && x >= edges[i]) i++;
  return i;
};

/**
 * A unit vector describing a response's kind, not its exact words: three blocks of equal norm —
 * content (hashed character trigrams and words), ending (hashed last 3 characters and last word)
 * and structure (one-hot length bucket, sentence-count bucket, ending class, whether it contains
 * a question mark, a digit, a line break) — in `dimensions` slots (the last 24 structural).
 */
export function responseFeatures(text: string, dimensions = 512): Float32Array {
  const out = new Float32Array(dimensions);
  const n = dimensions - STRUCT;
  const t = text.toLowerCase().replace(/\s+/g, ' ').trim();
  const hashed = new Float32Array(n);
  // Content: character trigrams and words.
  const padded = ` ${t} `;
  for (let i = 0; i + 3 <= padded.length; i++) addHashed(hashed, n, padded.slice(i, i + 3), 1, 1);
  const words = t.match(/[\p{L}\p{N}]+/gu) ?? [];
  for (const w of words) addHashed(hashed, n, w, 2, 1);
  normalizeRange(hashed, 0, n, 1);
  // Ending: its last characters and last word (in the same hashed space, other seeds).
  const ending = new Float32Array(n);
  if (t.length > 0) {
    addHashed(ending, n, t.slice(-3), 3, 1);
    addHashed(ending, n, t.slice(-1), 4, 1);
    if (words.length > 0) addHashed(ending, n, words[words.length - 1], 5, 1);
  }
  normalizeRange(ending, 0, n, 1);
  for (let i = 0; i < n; i++) out[i] = hashed[i] + ending[i];
  // Structure: fixed slots.
  const s = n;
  out[s + bucket(t.length, [16, 32, 64, 128, 256, 512])] = 1; // 7 slots: 0..6
  const sentences = t.split(/[.!?]+/).filter((x) => x.trim().length > 0).length;
  out[s + 7 + bucket(sentences, [2, 3, 5])] = 1; // 4 slots: 7..10
  const last = t.slice(-1);
  const endClass = last === '?' ? 0 : last === '!' ? 1 : last === '.' ? 2 : /[\p{L}\p{N}]/u.test(last) ? 3 : 4;
  out[s + 11 + endClass] = 1; // 5 slots: 11..15
  if (t.includes('?')) out[s + 16] = 1;
  if (/\p{N}/u.test(t)) out[s + 17] = 1;
  if (/\n/.test(text)) out[s + 18] = 1;
  normalizeRange(out, s, dimensions, 1);
  normalizeRange(out, 0, dimensions, 1);
  return out;
}

function dot(a: Float32Array, b: Float32Array | Float64Array): number {
  let s = 0;
  for (let i = 0; i < a.length; i++) s += a[i] * b[i];
  return s;
}

export class UserConsensus {
  private readonly o: Required<UserConsensusOptions>;
  private readonly decay: number;
  private readonly prompts = new Map<string, ResponseEntry[]>();
  private readonly users = new Map<string, UserState>();
  private readonly pairs = new Map<string, { comparisons: number; disagreements: number }>();
  private dirty = false;

  constructor(options: UserConsensusOptions = {}) {
    this.o = withDefaults(USER_CONSENSUS_DEFAULTS, options);
    if (this.o.dimensions < STRUCT + 8) throw new RangeError(`dimensions must be at least ${STRUCT + 8}`);
    this.decay = Math.pow(2, -1 / this.o.halfLife);
  }

  /** Users currently remembered. */
  get size(): number {
    return this.users.size;
  }

  /** Folds one rated turn in (weights are recomputed lazily, when next asked for). */
  observe(turn: RatedTurn): void {
    const user = turn.userId ?? ANONYMOUS;
    let u = this.users.get(user);
    if (u) {
      this.users.delete(user); // re-inserted last: the map is in least-recently-seen order
    } else {
      u = {
        samples: 0,
        rewardSum: 0,
        agree: 0,
        disagree: 0,
        pos: new Float32Array(this.o.preferences ? this.o.dimensions : 0),
        neg: new Float32Array(this.o.preferences ? this.o.dimensions : 0),
        nPos: 0,
        nNeg: 0,
        unit: null,
        agreement: null,
        overlap: 0,
        weight: this.priorWeight(),
      };
      if (this.users.size >= this.o.maxUsers) {
        this.users.delete(this.users.keys().next().value as string);
        this.dirty = true;
      }
    }
    this.users.set(user, u);
    u.samples++;
    u.rewardSum += turn.reward;
    const sign = Math.sign(turn.reward);

    if (this.o.preferences && sign !== 0) {
      const x = responseFeatures(turn.response, this.o.dimensions);
      const g = this.decay;
      for (let i = 0; i < x.length; i++) {
        u.pos[i] *= g;
        u.neg[i] *= g;
      }
      u.nPos *= g;
      u.nNeg *= g;
      const side = sign > 0 ? u.pos : u.neg;
      for (let i = 0; i < x.length; i++) side[i] += x[i];
      if (sign > 0) u.nPos++;
      else u.nNeg++;
      this.dirty = true;
    }

    this.observeExact(user, u, turn, sign);
  }

  private observeExact(user: string, u: UserState, turn: RatedTurn, sign: number): void {
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

    if (sign !== 0) {
      const others = [...entry.byUser].filter(([id]) => id !== user);
      const otherRewards = others.flatMap(([, rs]) => rs).filter((r) => r !== 0);
      if (otherRewards.length > 0) {
        const consensus = Math.sign(mean(otherRewards));
        if (consensus !== 0) {
          if (consensus === sign) u.agree++;
          else u.disagree++;
          this.dirty = true;
        }
      }
      for (const [other, rs] of others) {
        const theirs = Math.sign(mean(rs));
        if (theirs === 0) continue;
        const k = [user, other].sort().join('\u0000');
        const p = this.pairs.get(k) ?? { comparisons: 0, disagreements: 0 };
        this.pairs.delete(k);
        if (this.pairs.size >= this.o.maxPairs) this.pairs.delete(this.pairs.keys().next().value as string);
        p.comparisons++;
        if (theirs !== sign) p.disagreements++;
        this.pairs.set(k, p);
      }
    }
    const mine = entry.byUser.get(user) ?? [];
    mine.push(turn.reward);
    entry.byUser.set(user, mine);
  }

  /** The weight of a user with no evidence either way (the prior), what the learner measures others against. */
  priorWeight(): number {
    return Math.max(this.o.minWeight, this.o.priorAgree / (this.o.priorAgree + this.o.priorDisagree));
  }

  /** Unit preference: mean(rewarded) − mean(punished), null when it is zero. */
  private unitPreference(u: UserState): Float32Array | null {
    if (u.nPos + u.nNeg < 1e-9) return null;
    const p = new Float32Array(u.pos.length);
    const a = u.nPos > 1e-9 ? 1 / u.nPos : 0;
    const b = u.nNeg > 1e-9 ? 1 / u.nNeg : 0;
    let s = 0;
    for (let i = 0; i < p.length; i++) {
      p[i] = u.pos[i] * a - u.neg[i] * b;
      s += p[i] * p[i];
    }
    if (s < 1e-12) return null;
    const k = 1 / Math.sqrt(s);
    for (let i = 0; i < p.length; i++) p[i] *= k;
    return p;
  }

  /**
   * Recomputes every user's agreement and weight (O(users × dimensions)); done lazily, once
   * after any number of observations. Two passes: agreements with the others' consensus
   * weighted by rated turns only, then again with each other user's weight from the first pass
   * multiplied in (so a user already found contrary counts less in everyone else's consensus).
   * Both depend only on the state, not on when they are computed.
   */
  private refresh(): void {
    if (!this.dirty) return;
    this.dirty = false;
    const live: UserState[] = [];
    for (const u of this.users.values()) {
      u.unit = this.o.preferences ? this.unitPreference(u) : null;
      u.agreement = null;
      u.overlap = 0;
      if (u.unit) live.push(u);
    }
    const weights = new Map<UserState, number>();
    for (const pass of [0, 1]) {
      const total = new Float64Array(this.o.preferences ? this.o.dimensions : 0);
      let totalTurns = 0;
      const voice = (u: UserState) => (u.nPos + u.nNeg) * (pass === 0 ? 1 : weights.get(u)!);
      for (const u of live) {
        const c = voice(u);
        for (let i = 0; i < total.length; i++) total[i] += c * u.unit![i];
        totalTurns += u.nPos + u.nNeg;
      }
      // The others' consensus is total − c·unit: cos = (unit·total − c·|unit|²) / |total − c·unit|,
      // with |total − c·unit|² = |total|² − 2c (unit·total) + c² |unit|².
      let tt = 0;
      for (let i = 0; i < total.length; i++) tt += total[i] * total[i];
      for (const u of live) {
        const own = u.nPos + u.nNeg;
        const c = voice(u);
        const ut = dot(u.unit!, total);
        const uu = dot(u.unit!, u.unit!);
        const norm = Math.sqrt(Math.max(0, tt - 2 * c * ut + c * c * uu));
        if (norm > 1e-6 * Math.max(1, Math.sqrt(tt))) {
          u.agreement = Math.max(-1, Math.min(1, (ut - c * uu) / norm));
          u.overlap = Math.min(own, totalTurns - own);
        } else {
          u.agreement = null;
          u.overlap = 0;
        }
      }
      for (const u of this.users.values()) weights.set(u, this.computeWeight(u));
    }
    for (const [u, w] of weights) u.weight = w;
  }

  private computeWeight(u: UserState): number {
    const { priorAgree: a, priorDisagree: b } = this.o;
    let num = a + u.agree;
    let den = a + b + u.agree + u.disagree;
    if (u.agreement !== null) {
      const e = this.o.evidencePerTurn * u.overlap;
      const f = Math.max(0, Math.min(1, 0.5 + u.agreement / (2 * this.o.agreementScale)));
      num += e * f;
      den += e;
    }
    return Math.max(this.o.minWeight, num / den);
  }

  /** How much this user's feedback counts, in [minWeight, 1]. */
  weight(userId: string | null): number {
    this.refresh();
    return this.users.get(userId ?? ANONYMOUS)?.weight ?? this.priorWeight();
  }

  stats(): UserStats[] {
    this.refresh();
    return [...this.users]
      .map(([userId, u]) => ({
        userId,
        samples: u.samples,
        meanReward: u.samples ? u.rewardSum / u.samples : 0,
        agreements: u.agree,
        disagreements: u.disagree,
        ratedTurns: u.nPos + u.nNeg,
        agreement: u.agreement,
        weight: u.weight,
      }))
      .sort((x, y) => x.userId.localeCompare(y.userId));
  }

  /** Users who push the model in opposite directions: opposed preference vectors or exact turns. */
  conflicts(): Conflict[] {
    this.refresh();
    const found = new Map<string, Conflict>();
    const entry = (k: string): Conflict =>
      found.get(k) ?? { users: k.split('\u0000') as [string, string], comparisons: 0, disagreementRate: 0, similarity: null };
    // Preference vectors: the users with the most evidence, pairwise.
    const ranked = [...this.users]
      .filter(([, u]) => u.unit && u.nPos + u.nNeg >= this.o.minConflictEvidence)
      .sort((x, y) => y[1].nPos + y[1].nNeg - (x[1].nPos + x[1].nNeg))
      .slice(0, this.o.maxConflictUsers);
    const cos = new Map<string, number>();
    for (let i = 0; i < ranked.length; i++) {
      for (let j = i + 1; j < ranked.length; j++) {
        const k = [ranked[i][0], ranked[j][0]].sort().join('\u0000');
        const c = dot(ranked[i][1].unit!, ranked[j][1].unit!);
        cos.set(k, c);
        if (c <= this.o.conflictCosine) found.set(k, { ...entry(k), similarity: c });
      }
    }
    for (const [k, p] of this.pairs) {
      if (p.comparisons < this.o.minConflictComparisons) continue;
      const rate = p.disagreements / p.comparisons;
      if (rate >= this.o.conflictRate)
        found.set(k, { ...entry(k), comparisons: p.comparisons, disagreementRate: rate, similarity: cos.get(k) ?? null });
    }
    // Vector-found pairs also show their exact-turn record, if any.
    for (const [k, c] of found) {
      const p = this.pairs.get(k);
      if (p && c.comparisons === 0) found.set(k, { ...c, comparisons: p.comparisons, disagreementRate: p.disagreements / p.comparisons });
    }
    return [...found.values()].sort(
      (x, y) => (x.similarity ?? 0) - (y.similarity ?? 0) || y.disagreementRate - x.disagreementRate || y.comparisons - x.comparisons,
    );
  }
}
