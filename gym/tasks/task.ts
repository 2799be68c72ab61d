/**
 * A gym task (docs/gym.md): an instruction, the workspace it starts from, the tools the agent is
 * offered, and a verifier that decides, after the episode, whether it was done. A suite is a
 * JSONL file of tasks, one a line:
 *
 * ```json
 * {"id": "upper-copy", "instruction": "Put the text of low.txt, in capitals, into up.txt.",
 *  "files": {"low.txt": "quiet words\n"}, "tools": ["bash", "read_file", "write_file"],
 *  "verify": {"command": "grep -qx 'QUIET WORDS' up.txt"}, "max_turns": 6, "timeout_s": 60}
 * ```
 */
import type { PersonaCheck } from '../../measure/index.ts';

/** The tools an agent may be offered: a shell, file reading and writing, and a Python code tool. */
export const TOOL_NAMES = ['bash', 'read_file', 'write_file', 'python'] as const;

/** One tool's name. */
export type ToolName = (typeof TOOL_NAMES)[number];

/**
 * Which side of the split a task is on: trained on (`train`), held out to choose settings and
 * stop early (`dev`), held out to report (`test`). `eval`, the older name of a held-out task, is
 * read as `test`.
 */
export type TaskSplit = 'train' | 'dev' | 'test';

/**
 * One verifier.
 * - `command`: run with `sh -c` in the sandboxed workspace; exit 0 passes.
 * - `answer`: a check in the persona check language (measure/check-language.ts), applied to the
 *   final assistant message.
 */
export type VerifyPart = { command: string } | { answer: PersonaCheck };

/**
 * How a rollout is judged once its episode is over: one verifier, or named parts (e.g.
 * `{"parts": {"content": {"answer": …}, "format": {"answer": …}}}`) that must all pass, each
 * reported on its own so that a rise in one (brevity) is not read as a rise in another (knowledge).
 */
export type TaskVerify = VerifyPart | { parts: Readonly<Record<string, VerifyPart>> };

/** A task as a suite file writes it: one JSON object per line. */
export interface TaskSpec {
  /** Unique in its file: letters, digits, `-` and `_`, at most 64 (it names sessions and reports). */
  id: string;
  /** What the agent is asked to do: the first user message. */
  instruction: string;
  /** The workspace's files at the start: relative path → content (folders are made as needed). @default {} */
  files?: Record<string, string>;
  /** The tools the agent is offered; `[]` means the task is answered in words only. @default all of {@link TOOL_NAMES} */
  tools?: ToolName[];
  /** How the rollout is judged (exactly one of `command` and `answer`). */
  verify: TaskVerify;
  /** Most model calls in one episode. @default 6 */
  max_turns?: number;
  /** Wall-clock bound of one episode, in seconds: everything is aborted past it. @default 60 */
  timeout_s?: number;
  /** Train, dev or test (`eval`: test); where no task of the file says, {@link splitTasks} holds out 3 in 8. @default none (decided by the split) */
  split?: TaskSplit | 'eval';
}

/** A validated task, its defaults filled in. */
export interface Task {
  /** Unique in its suite. */
  id: string;
  /** The first user message. */
  instruction: string;
  /** The workspace's files at the start. */
  files: Readonly<Record<string, string>>;
  /** The tools offered, in the order the file gives them (`[]`: answer only). */
  tools: readonly ToolName[];
  /** How the rollout is judged (the check was validated when the suite was read). */
  verify: TaskVerify;
  /** Most model calls in one episode. */
  maxTurns: number;
  /** Wall-clock bound of one episode, in seconds. */
  timeoutS: number;
  /** The split the file names, if it names one. */
  split?: TaskSplit;
}

/** Most model calls in an episode whose task says nothing. */
export const DEFAULT_MAX_TURNS = 6;
/** An episode's wall-clock bound, seconds, when a task says nothing. */
export const DEFAULT_TIMEOUT_S = 60;
/** Upper bounds a task may ask for: a suite cannot tie a run up for days. */
export const MAX_TURNS_LIMIT = 100;
export const TIMEOUT_S_LIMIT = 3600;

/** Whether a verifier is a command (else an answer check). */
export const isCommandVerify = (v: VerifyPart): v is { command: string } => 'command' in v;

/** A task's verifiers by name: its parts, or its one verifier (named after its kind). */
export function verifyParts(v: TaskVerify): Array<[string, VerifyPart]> {
  if ('parts' in v) return Object.entries(v.parts);
  return [[isCommandVerify(v) ? 'command' : 'answer', v]];
}

/** Whether any verifier of the task runs a command (it needs the rollout's sandbox). */
export const runsCommand = (v: TaskVerify): boolean => verifyParts(v).some(([, p]) => isCommandVerify(p));
