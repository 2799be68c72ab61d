/**
 * Hints become teacher context (OPD: appended to the prompt as "[user's hint / instruction]"),
 * so they must carry the user's correction, never an injected instruction. A hint is cut into
 * sentences and every sentence that reads as an attempt to steer the model beyond the
 * correction is left out: "ignore previous instructions", talk of system prompts and roles,
 * a `\boxed{}` or a hint marker for the judge's parser, chat-template tokens, and orders to
 * output some exact text. What is left is the hint; nothing left (or too little), no hint.
 */
import { MIN_HINT_LENGTH } from './majority-vote.ts';

const INSTRUCTION_LIKE: RegExp[] = [
  /\b(?:ignore|disregard|forget|override|bypass)\b.{0,60}\b(?:instructions?|rules?|prompts?|guidelines?|directions?|context|everything|above|previous)\b/i,
  /\b(?:system|developer)\s*(?:prompt|message|instructions?|role)\b/i,
  /\b(?:you are now|from now on you|act as|pretend (?:to be|you are)|new instructions?|jailbreak|do anything now|developer mode)\b/i,
  /\\boxed|\[HINT_(?:START|END)\]|<\|[^|>]{1,40}\|>|<\/?(?:system|assistant|user|tool|context|next_state|quote|assistant_output)\b/i,
  // An order to emit exact text; "end every reply with 'Cheers!'" (reply as a noun) is a style correction.
  /(?<!\b(?:every|each|your|the|a|my|this|that)\s+)\b(?:output|print|write|respond with|reply with|answer with|say|type)\s+(?:only\s+|exactly\s+|just\s+)?(?:["'`“‘]|the (?:word|text|string)\b)/i,
  /\b(?:score|rate|judge|grade)\b.{0,30}\b(?:this|it|me|the answer|the reply)\b.{0,20}(?:\b1\b|\bpositive\b|\bhigh(?:est)?\b|\bperfect\b)/i,
];

export const isInstructionLike = (sentence: string): boolean => INSTRUCTION_LIKE.some((re) => re.test(sentence));

const sentences = (text: string): string[] =>
  text
    .split(/(?<=[.!?])\s+|\n+/)
    .map((s) => s.trim())
    .filter(Boolean);

/** The hint without its instruction-like sentences; null when nothing usable is left. */
export function guardHint(hint: string | null): string | null {
  if (hint === null) return null;
  const kept = sentences(hint).filter((s) => !isInstructionLike(s));
  const out = kept.join(' ').trim();
  return out.length > MIN_HINT_LENGTH ? out : null;
}
