/**
 * A judge endpoint's script for the pipeline tests: its reply depends on the marker in the
 * pair's next user message.
 *   [[pos]] → 1 (no hint)           [[neg]] → −1 and a hint        [[garbage]] → no boxed value → 0
 *   [[tie]] → 1, −1, invalid → 0    [[slow]] → the first vote is late (retried) → 1
 *   [[hintonly]] → 0 and a hint     [[timeout]] → every vote is late → DLQ
 *   [[fail]] → every call 500 → JUDGE_FAILED → DLQ                  anything else → 0, no hint
 */
import { HINT_SYSTEM_PROMPT } from '../../../../processors/judge/index.ts';
import { chat, type FakeBody, type FakeReply } from './fake-openai.ts';

/** The hint the script gives for [[neg]] and [[hintonly]]. */
export const SCRIPTED_HINT = 'Answer in one short sentence.';

/** The script; `calls` counts the calls per `<marker>:<hint call>` (one instance per run: tie and slow count theirs). */
export function scriptedJudge(o: {
  /** How late a late vote is: more than the judge's timeout. */
  lateMs: number;
}): ((body: FakeBody) => FakeReply) & { calls: Map<string, number> } {
  const seen = new Map<string, number>();
  const reply = (body: FakeBody): FakeReply => {
    const user = body.messages[1].content ?? '';
    const next = /<next_state role="user">\n([\s\S]*?)\n<\/next_state>/.exec(user)?.[1] ?? '';
    const marker = /\[\[(\w+)\]\]/.exec(next)?.[1] ?? 'none';
    const hintCall = body.messages[0].content === HINT_SYSTEM_PROMPT;
    const n = seen.get(`${marker}:${hintCall}`) ?? 0;
    seen.set(`${marker}:${hintCall}`, n + 1);
    if (marker === 'fail') return { status: 500, body: 'judge down' };
    if (marker === 'timeout') return { delayMs: o.lateMs, ...chat('\\boxed{1}') };
    if (hintCall) {
      return marker === 'neg' || marker === 'hintonly'
        ? chat(`They want brevity. [HINT_START]${SCRIPTED_HINT}[HINT_END] \\boxed{1}`)
        : chat('Nothing useful. \\boxed{-1}');
    }
    switch (marker) {
      case 'pos':
        return chat('The user moved on happily. \\boxed{1}');
      case 'neg':
        return chat('A correction. \\boxed{-1}');
      case 'garbage':
        return chat('I will not use the format.');
      case 'tie':
        return chat(['\\boxed{1}', '\\boxed{-1}', 'hmm'][n % 3]);
      case 'slow':
        return n === 0 ? { delayMs: o.lateMs, ...chat('\\boxed{-1}') } : chat('\\boxed{1}');
      default:
        return chat('\\boxed{0}');
    }
  };
  return Object.assign(reply, { calls: seen });
}
