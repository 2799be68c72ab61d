/**
 * The verifier: after an episode, whether the task was done (reward 1) or not (0).
 * - `command`: `sh -c command` in the rollout's sandboxed workspace, under limits of its own
 *   (whatever the agent left running is gone: each command runs in namespaces of its own);
 *   exit 0 passes.
 * - `answer`: the task's check (the persona check language, eval/persona-check.ts) on the
 *   final assistant message.
 */
import { invalidInput } from '../../core/index.ts';
import { compileCheck, type PersonaCheck } from '../../eval/index.ts';
import type { ExecResult, Sandbox, SandboxLimits } from '../sandbox/sandbox.ts';
import { isCommandVerify, type Task } from '../tasks/task.ts';

/** A rollout's outcome. */
export interface Verdict {
  /** The task was done. */
  passed: boolean;
  /** 1 when passed, else 0. */
  reward: number;
  /** Which kind of verifier judged it. */
  kind: 'command' | 'answer';
  /** For people: the command's exit and its last output lines, or which check failed. */
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
 * Judges a rollout.
 * @throws TurnstreamError TS_ERR_ABORTED when `signal` aborts the verify command; TS_ERR_INVALID_INPUT
 * for a `command` task without a sandbox
 */
export async function verifyRollout(task: Pick<Task, 'verify'>, options: VerifyOptions): Promise<Verdict> {
  const verdict = (kind: Verdict['kind'], passed: boolean, detail: string): Verdict => ({ passed, reward: passed ? 1 : 0, kind, detail });
  const v = task.verify;
  if (isCommandVerify(v)) {
    if (!options.sandbox) throw invalidInput('a command verifier needs the rollout’s sandbox', 'sandbox');
    const r = await options.sandbox.sh(v.command, { limits: { ...VERIFY_LIMITS, ...options.limits }, signal: options.signal });
    const passed = r.exitCode === 0 && !r.timedOut;
    const out = lastLines(r);
    return verdict('command', passed, `${endOf(r)}${out ? `; last output:\n${out}` : ''}`);
  }
  if (options.finalAnswer === null) return verdict('answer', false, 'no final answer');
  const why = explainCheck(v.answer, options.finalAnswer);
  return verdict('answer', why === null, why ?? 'the final answer passes the check');
}
