/**
 * The verifier: after an episode, whether the task was done (reward 1) or not (0).
 * - `command`: `sh -c command` in the rollout's sandboxed workspace, under limits of its own
 *   (whatever the agent left running is gone: each command runs in namespaces of its own);
 *   exit 0 passes.
 * - `answer`: the task's check (the persona check language, measure/check-language.ts) on the
 *   final assistant message.
 */
import { invalidInput } from '../../core/index.ts';
import { compileCheck, type PersonaCheck } from '../../measure/index.ts';
import type { ExecResult, Sandbox, SandboxLimits } from '../sandbox/sandbox.ts';
import { isCommandVerify, verifyParts, type Task, type VerifyPart } from '../tasks/task.ts';

/** A rollout's outcome. */
export interface Verdict {
  /** The task was done (every part passed). */
  passed: boolean;
  /** 1 when passed, else 0. */
  reward: number;
  /**
   * Partial credit in [0, 1]: the mean over parts of each part's score, a part scoring 1 when it
   * passes, and otherwise, for an answer check that is a conjunction (`all`), the share of its
   * conjuncts that hold (else 0). What a run trains on under `reward: 'partial'`.
   */
  score: number;
  /** Which kind of verifier judged it (`parts`: several named ones). */
  kind: 'command' | 'answer' | 'parts';
  /** Each named part, passed or not (a task with one verifier: that one, named after its kind). */
  parts: Record<string, boolean>;
  /** For people: the command's exit and its last output lines, or which check failed (per part). */
  detail: string;
}

/** Limits of a verify command: tighter than an agent's by default, as it only checks. */
export const VERIFY_LIMITS: Readonly<Partial<SandboxLimits>> = Object.freeze({ wallMs: 20_000, cpuSeconds: 10, outputBytes: 64 * 1024 });

/** Options of {@link verifyRollout}. */
export interface VerifyOptions {
  /** The rollout's sandbox (its workspace as the episode left it); needed by `command` tasks. */
  sandbox?: Sandbox;
  /** The final assistant message, or null when the episode produced none. */
  finalAnswer: string | null;
  /** Limits of the verify command, over the sandbox's. @default {@link VERIFY_LIMITS} */
  limits?: Partial<SandboxLimits>;
  /** Aborts the verify command (TS_ERR_ABORTED). @default none */
  signal?: AbortSignal;
}

/** Lines and characters of a command's output kept in the detail. */
const DETAIL_LINES = 5;
const DETAIL_CHARS = 400;

/** How a command ended, in words: `exit 1`, `killed (wall)`. */
export function endOf(r: Pick<ExecResult, 'exitCode' | 'signal' | 'killedBy' | 'timedOut'>): string {
  if (r.exitCode !== null && !r.timedOut) return `exit ${r.exitCode}`;
  return `killed by ${r.signal ?? 'SIGKILL'}${r.killedBy ? ` (${r.killedBy} limit)` : ''}`;
}

/** The last few lines of a command's output. */
function lastLines(r: Pick<ExecResult, 'stdout' | 'stderr'>): string {
  const text = [r.stdout, r.stderr]
    .map((s) => s.trimEnd())
    .filter((s) => s !== '')
    .join('\n');
  const lines = text.trimEnd().split('\n').slice(-DETAIL_LINES).join('\n');
  return lines.length > DETAIL_CHARS ? `…${lines.slice(-DETAIL_CHARS)}` : lines;
}

/**
 * Why a reply fails a check (pure): the path of the first part that fails, or null when it
 * passes. Leaves and `not` are judged with the compiled check language itself.
 */
export function explainCheck(check: PersonaCheck, reply: string, path = 'verify.answer'): string | null {
  if (compileCheck(check, path)(reply)) return null;
  if (reply.trim() === '') return 'the final answer is empty';
  if ('all' in check) {
    for (const [i, c] of check.all.entries()) {
      const why = explainCheck(c, reply, `${path}.all[${i}]`);
      if (why !== null) return why;
    }
  }
  if ('any' in check) return `${path}.any: none of its ${check.any.length} checks passed`;
  return `${path} failed: ${JSON.stringify(check)}`;
}

/**
 * Judges a rollout: every part of its verifier, in order (each command in the sandbox as the
 * episode left it; a command does not see what an earlier one changed, as each runs on the
 * workspace itself, so a part's command should only read).
 * @throws TurnstreamError TS_ERR_ABORTED when `signal` aborts a verify command; TS_ERR_INVALID_INPUT
 * for a `command` part without a sandbox
 */
export async function verifyRollout(task: Pick<Task, 'verify'>, options: VerifyOptions): Promise<Verdict> {
  const v = task.verify;
  const named = verifyParts(v);
  const parts: Record<string, boolean> = {};
  const details: string[] = [];
  let score = 0;
  for (const [name, part] of named) {
    const r = await verifyPart(part, options, 'parts' in v ? `verify.parts.${name}` : 'verify');
    parts[name] = r.passed;
    score += r.passed ? 1 : partialCredit(part, options.finalAnswer);
    details.push('parts' in v ? `${name}: ${r.passed ? 'passed' : 'failed'}; ${r.detail}` : r.detail);
  }
  const passed = Object.values(parts).every(Boolean);
  const kind: Verdict['kind'] = 'parts' in v ? 'parts' : isCommandVerify(v) ? 'command' : 'answer';
  return { passed, reward: passed ? 1 : 0, score: score / named.length, kind, parts, detail: details.join('\n') };
}

/** A failed part's credit: the share of a conjunction's checks that hold on the answer (0 for anything else). */
function partialCredit(part: VerifyPart, answer: string | null): number {
  if (isCommandVerify(part) || !('all' in part.answer) || answer === null || answer.trim() === '') return 0;
  const checks = part.answer.all;
  return checks.filter((c) => compileCheck(c, 'verify.answer')(answer)).length / Math.max(1, checks.length);
}

async function verifyPart(part: VerifyPart, options: VerifyOptions, path: string): Promise<{ passed: boolean; detail: string }> {
  if (isCommandVerify(part)) {
    if (!options.sandbox) throw invalidInput('a command verifier needs the rollout’s sandbox', 'sandbox');
    const r = await options.sandbox.sh(part.command, { limits: { ...VERIFY_LIMITS, ...options.limits }, signal: options.signal });
    const passed = r.exitCode === 0 && !r.timedOut;
    const out = lastLines(r);
    return { passed, detail: `${endOf(r)}${out ? `; last output:\n${out}` : ''}` };
  }
  if (options.finalAnswer === null) return { passed: false, detail: 'no final answer' };
  const why = explainCheck(part.answer, options.finalAnswer, `${path}.answer`);
  return { passed: why === null, detail: why ?? 'the final answer passes the check' };
}
