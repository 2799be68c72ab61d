/**
 * Reading a user's reply without a model: correction cues, sentiment (AFINN-165 with emoji, via
 * the `sentiment` package) and, from a correction, a hint in the user's own words.
 */
import Sentiment from 'sentiment';

export interface SentimentThresholds {
  /** A reply is positive when its AFINN score is at least this… @default 2 */
  positiveScore?: number;
  /** …and its score per word at least this (so one "like" in a long request is not praise). @default 0.25 */
  positiveComparative?: number;
  /** A reply is negative when its score is at most this… @default -2 */
  negativeScore?: number;
  /** …or its score per word at most this (a lone 👎 or "bad"). @default -0.5 */
  negativeComparative?: number;
}

const analyzer = new Sentiment();

/** 1, 0 or -1 from the sentiment of `text`. */
export function sentimentScore(text: string, t: SentimentThresholds = {}): { score: 1 | 0 | -1; afinn: number; comparative: number } {
  const r = analyzer.analyze(text);
  const { positiveScore = 2, positiveComparative = 0.25, negativeScore = -2, negativeComparative = -0.5 } = t;
  const score =
    r.score >= positiveScore && r.comparative >= positiveComparative
      ? 1
      : r.score <= negativeScore || r.comparative <= negativeComparative
        ? -1
        : 0;
  return { score, afinn: r.score, comparative: r.comparative };
}

/** Redo / correction cues: any one makes a reply a correction. */
const CORRECTION_CUES: RegExp[] = [
  /^\s*(?:no|nope|nah)\b(?!\s+(?:problem|worries|need|thanks|thank you|rush|doubt)\b)/i,
  /^\s*(?:wrong|incorrect|not quite|not really)\b/i,
  /\bthat(?:'s|’s| is| was)\s+(?:wrong|incorrect|not (?:right|correct|true|it|what i (?:asked|meant|wanted|said)))\b/i,
  /\b(?:this|it)(?:'s|’s| is)\s+(?:wrong|incorrect)\b/i,
  /\bnot what i (?:asked|meant|wanted|said)\b/i,
  /\b(?:try|do it|answer|start) (?:again|over)\b/i,
  /\bredo\b/i,
  /\b(?:doesn'?t|does not|didn'?t|did not) answer\b/i,
  /\bi (?:said|told you|asked (?:you|for))\b/i,
  /\byou (?:forgot|missed|ignored|didn'?t|did not|misunderstood)\b/i,
  /\btoo (?:long|short|verbose|wordy|formal|informal|casual|complicated|complex|vague|impersonal|fragmented|long-winded|dense)\b/i,
  // A request about the form of the answer just given.
  /\bbe (?:more )?(?:concise|brief|direct|formal|personal)\b/i,
  /\b(?:as|in) (?:one|a single) (?:paragraph|line|sentence)\b/i,
  /\b(?:without|no) (?:line breaks|lists|bullet points|bullets)\b/i,
  /\b(?:please )?(?:don'?t|do not|stop) (?:\w+ing|use|say|call|write|add)\b/i,
  // A reply that loops.
  /\b(?:repeating|repeat) yourself\b/i,
  /\bgoing (?:round|around) in circles\b/i,
  /\bthat(?:'s|’s| is) (?:no|not an) answer\b/i,
];

export const isCorrection = (text: string): boolean => CORRECTION_CUES.some((re) => re.test(text));

/** Stated reasons → the instruction they imply. */
const REASONS: Array<[RegExp, string]> = [
  [/\btoo (?:long|verbose|wordy)\b/i, 'Keep the answer short.'],
  [/\btoo short\b/i, 'Give a more detailed answer.'],
  [/\btoo formal\b/i, 'Use a casual, friendly tone.'],
  [/\btoo (?:informal|casual)\b/i, 'Use a more formal tone.'],
  [/\btoo (?:complicated|complex)\b/i, 'Explain it more simply.'],
  [/\btoo vague\b/i, 'Be concrete and specific.'],
  [/\b(?:repeating|repeat) yourself\b|\bin circles\b/i, 'Do not repeat yourself.'],
  // As the user said it ("That doesn't answer my question.") the hint made the teacher apologise,
  // and OPD taught the apology ("I'm sorry for the confusion, but I'm unable to assist you.").
  [
    /\b(?:doesn'?t|does not|didn'?t|did not) answer\b|\bnot what i (?:asked|meant)\b|\b(?:no|not an) answer\b|\banswer (?:my|the) question\b/i,
    'Answer the question itself.',
  ],
];

/**
 * Words that only say "this was wrong" and carry no instruction. A "no" counts only on its own
 * ("No, shorter."): stripped from "No lists or line breaks, please" it asked for lists.
 */
const BARE_CORRECTION =
  /^(?:(?:no|nope|nah)(?=\s*(?:[,.!?;:]|$))|wrong|incorrect|not quite|that(?:'s|’s| is| was) (?:wrong|incorrect|not (?:right|correct|it|what i (?:asked|meant|wanted|said)))|(?:this|it)(?:'s|’s| is) (?:wrong|incorrect)|not what i (?:asked|meant|wanted|said)|(?:please )?(?:try|do it|answer) again|redo(?: it)?|that(?:'s|’s| is) too \w+|too \w+|that (?:doesn'?t|does not|didn'?t|did not) answer (?:my|the) question|that(?:'s|’s| is) (?:no|not an) answer|(?:please )?(?:just )?answer (?:my|the) question|you(?:'re|’re| are)? (?:keep )?repeating yourself|you(?:'re|’re| are) going (?:round|around) in circles)\b[\s,.!?]*/i;

const sentences = (text: string): string[] =>
  text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);

const capitalize = (s: string): string => s.charAt(0).toUpperCase() + s.slice(1);

/**
 * A hint from a correction, in the user's own words: the reasons it states ("too long" → "Keep
 * the answer short.") and its instructions with the bare correction words removed ("No, I said
 * call me Bob." → "Call me Bob."). Null when nothing instructive is left (a bare "wrong").
 */
export function hintFromCorrection(text: string, maxChars = 400): string | null {
  const out: string[] = [];
  for (const [re, instruction] of REASONS) if (re.test(text) && !out.includes(instruction)) out.push(instruction);
  for (const s of sentences(text)) {
    let rest = s;
    for (let i = 0; i < 3; i++) rest = rest.replace(BARE_CORRECTION, '').trim();
    rest = rest.replace(/^(?:but|and|so|just|please|rather)\b[\s,]*/i, '').trim();
    rest = rest.replace(/^i (?:said|told you|asked (?:you )?)(?: to)?\s*/i, '').trim();
    rest = rest.replace(/^(?:you (?:should|must|need to|have to))\s+/i, '').trim();
    if (rest.replace(/[^\p{L}\p{N}]/gu, '').length < 3) continue;
    if (!/[.!?]$/.test(rest)) rest += '.';
    out.push(capitalize(rest));
  }
  const hint = out.join(' ').slice(0, maxChars).trim();
  return hint.length > 0 ? hint : null;
}
