/**
 * Reading a task suite (JSONL, one task a line; blank lines are skipped). Validated as the
 * persona file of `turnstream eval` is: a bad line is ONE `TurnstreamError(INVALID_INPUT)` whose
 * message names the source, the line, the task (when it has an id) and the field:
 * `tasks.jsonl: line 3: task "upper-copy": tools[1] "curl" is not a tool (tools: bash, read_file, write_file, python)`.
 */
import { readFile } from 'node:fs/promises';
import { basename } from 'node:path';
import { invalidInput, TurnstreamError } from '../../core/index.ts';
import { compileCheck } from '../../measure/index.ts';
import {
  DEFAULT_MAX_TURNS,
  DEFAULT_TIMEOUT_S,
  MAX_TURNS_LIMIT,
  TIMEOUT_S_LIMIT,
  TOOL_NAMES,
  type Task,
  type TaskSpec,
  type TaskVerify,
  type ToolName,
  type VerifyPart,
} from './task.ts';

const FIELDS: readonly (keyof TaskSpec)[] = ['id', 'instruction', 'files', 'tools', 'verify', 'max_turns', 'timeout_s', 'split'];
const ID = /^[A-Za-z0-9][A-Za-z0-9_-]{0,63}$/;
/** Longest file path in `files`, and most files and bytes a task may set up. */
const MAX_PATH_CHARS = 255;
const MAX_FILES = 256;
const MAX_FILES_BYTES = 8 * 1024 * 1024;

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function files(v: unknown): Record<string, string> {
  if (!isObject(v)) throw invalidInput('files must be an object of relative path → text content', 'files');
  const entries = Object.entries(v);
  if (entries.length > MAX_FILES) throw invalidInput(`files has ${entries.length} entries (at most ${MAX_FILES})`, 'files');
  let bytes = 0;
  for (const [path, content] of entries) {
    const at = `files[${JSON.stringify(path)}]`;
    const parts = path.split('/');
    if (
      path === '' ||
      path.length > MAX_PATH_CHARS ||
      path.startsWith('/') ||
      path.includes('\0') ||
      parts.some((p) => p === '' || p === '.' || p === '..')
    ) {
      throw invalidInput(`${at}: a file path must be relative, inside the workspace, without "." or ".." or empty parts`, at);
    }
    if (typeof content !== 'string') throw invalidInput(`${at} must be a string (the file's text)`, at);
    bytes += Buffer.byteLength(content);
  }
  if (bytes > MAX_FILES_BYTES) throw invalidInput(`files hold ${bytes} bytes (at most ${MAX_FILES_BYTES})`, 'files');
  return { ...(v as Record<string, string>) };
}

function tools(v: unknown): ToolName[] {
  if (!Array.isArray(v))
    throw invalidInput(`tools must be an array of tool names (${TOOL_NAMES.join(', ')}), or [] for answer-only`, 'tools');
  v.forEach((t, i) => {
    if (typeof t !== 'string' || !(TOOL_NAMES as readonly string[]).includes(t))
      throw invalidInput(`tools[${i}] ${JSON.stringify(t)} is not a tool (tools: ${TOOL_NAMES.join(', ')})`, `tools[${i}]`);
    const first = v.indexOf(t);
    if (first < i) throw invalidInput(`tools[${i}] repeats tools[${first}] (${t})`, `tools[${i}]`);
  });
  return v as ToolName[];
}

const HOW =
  'verify must be {"command": "…"} (run with sh -c in the workspace; exit 0 passes), {"answer": CHECK} or {"parts": {NAME: {"command": …} | {"answer": …}, …}}';

function verifyPart(v: unknown, at: string): VerifyPart {
  if (!isObject(v)) throw invalidInput(HOW, at);
  const keys = Object.keys(v);
  const unknown = keys.find((k) => k !== 'command' && k !== 'answer');
  if (unknown !== undefined) throw invalidInput(`${at} has an unknown field "${unknown}" (${HOW})`, `${at}.${unknown}`);
  if (keys.length !== 1) throw invalidInput(`${at} needs exactly one of "command" and "answer" (has ${keys.length})`, at);
  if ('command' in v) {
    if (typeof v.command !== 'string' || v.command.trim() === '' || v.command.includes('\0'))
      throw invalidInput(`${at}.command must be a non-empty shell command`, `${at}.command`);
    return { command: v.command };
  }
  compileCheck(v.answer, `${at}.answer`); // throws naming the offending part of the check
  return { answer: v.answer as Extract<VerifyPart, { answer: unknown }>['answer'] };
}

function verify(v: unknown): TaskVerify {
  if (isObject(v) && 'parts' in v) {
    if (Object.keys(v).length !== 1) throw invalidInput(`verify with "parts" has nothing else (${HOW})`, 'verify');
    if (!isObject(v.parts) || Object.keys(v.parts).length === 0)
      throw invalidInput('verify.parts must name at least one part', 'verify.parts');
    const parts: Record<string, VerifyPart> = {};
    for (const [name, part] of Object.entries(v.parts)) {
      if (!/^[A-Za-z0-9_-]{1,32}$/.test(name))
        throw invalidInput(`verify.parts: "${name}" is no part name (letters, digits, - and _, at most 32)`, 'verify.parts');
      parts[name] = verifyPart(part, `verify.parts.${name}`);
    }
    return { parts };
  }
  return verifyPart(v, 'verify');
}

function positive(v: unknown, field: string, max: number, integer: boolean): number {
  if (typeof v !== 'number' || !Number.isFinite(v) || v <= 0 || v > max || (integer && !Number.isInteger(v)))
    throw invalidInput(`${field} must be a positive ${integer ? 'integer' : 'number'} of at most ${max}, got ${JSON.stringify(v)}`, field);
  return v;
}

/** One line's task (the caller names the line and the task in the message). */
function parseTask(raw: Record<string, unknown>): Task {
  const unknown = Object.keys(raw).find((k) => !(FIELDS as readonly string[]).includes(k));
  if (unknown !== undefined) throw invalidInput(`unknown field "${unknown}" (fields: ${FIELDS.join(', ')})`, unknown);
  if (typeof raw.instruction !== 'string' || raw.instruction.trim() === '')
    throw invalidInput('instruction must be a non-empty string', 'instruction');
  if (raw.verify === undefined) throw invalidInput('verify is missing ({"command": "…"} or {"answer": CHECK})', 'verify');
  const task: Task = {
    id: raw.id as string,
    instruction: raw.instruction,
    files: raw.files === undefined ? {} : files(raw.files),
    tools: raw.tools === undefined ? [...TOOL_NAMES] : tools(raw.tools),
    verify: verify(raw.verify),
    maxTurns: raw.max_turns === undefined ? DEFAULT_MAX_TURNS : positive(raw.max_turns, 'max_turns', MAX_TURNS_LIMIT, true),
    timeoutS: raw.timeout_s === undefined ? DEFAULT_TIMEOUT_S : positive(raw.timeout_s, 'timeout_s', TIMEOUT_S_LIMIT, false),
  };
  if (raw.split !== undefined) {
    if (raw.split !== 'train' && raw.split !== 'dev' && raw.split !== 'test' && raw.split !== 'eval')
      throw invalidInput(`split must be "train", "dev" or "test" ("eval" is read as "test"), got ${JSON.stringify(raw.split)}`, 'split');
    task.split = raw.split === 'eval' ? 'test' : raw.split;
  }
  return task;
}

/**
 * Validates a suite's text. Throws one `TurnstreamError(INVALID_INPUT)` naming the source, the
 * line, the task and the field; duplicate ids, unknown tools and fields, a bad `verify` (its
 * check included) are all rejected.
 */
export function parseTaskSuite(text: string, source = 'tasks'): Task[] {
  const tasks: Task[] = [];
  const seen = new Map<string, number>();
  const lines = text.split('\n');
  lines.forEach((line, i) => {
    const at = `${source}: line ${i + 1}`;
    if (line.trim() === '') return;
    let raw: unknown;
    try {
      raw = JSON.parse(line);
    } catch (err) {
      throw invalidInput(`${at}: not JSON: ${(err as Error).message}`, undefined, err);
    }
    if (!isObject(raw)) throw invalidInput(`${at}: a task must be a JSON object`);
    if (typeof raw.id !== 'string' || !ID.test(raw.id))
      throw invalidInput(`${at}: id must be 1–64 letters, digits, - and _ (starting with a letter or digit)`, 'id');
    const id = raw.id;
    if (seen.has(id)) throw invalidInput(`${at}: task "${id}": id is used twice (lines ${seen.get(id)} and ${i + 1})`, 'id');
    seen.set(id, i + 1);
    try {
      tasks.push(parseTask(raw));
    } catch (err) {
      if (!(err instanceof TurnstreamError)) throw err;
      throw invalidInput(`${at}: task "${id}": ${err.message}`, err.param, err);
    }
  });
  if (tasks.length === 0) throw invalidInput(`${source}: no tasks (one JSON object a line)`);
  return tasks;
}

/** Reads and validates a suite file (see {@link parseTaskSuite} for the errors; the source named is the file's name). */
export async function loadTaskSuite(file: string): Promise<Task[]> {
  let text: string;
  try {
    text = await readFile(file, 'utf8');
  } catch (err) {
    throw invalidInput(`${file}: cannot read the task suite: ${(err as Error).message}`, undefined, err);
  }
  return parseTaskSuite(text, basename(file));
}
