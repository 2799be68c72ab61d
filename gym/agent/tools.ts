/**
 * The agent's tools as OpenAI function tools, and their execution in the rollout's sandbox. What
 * a tool returns goes back to the model as text, capped (the model's context is small), with a
 * note saying how much was cut.
 */
import type { ChatCompletionFunctionTool } from 'openai/resources/chat/completions';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import type { ExecResult, Sandbox, SandboxLimits } from '../sandbox/sandbox.ts';
import type { ToolName } from '../tasks/task.ts';
import { endOf } from '../verify/verify-rollout.ts';

/** Characters of a tool's output the model sees by default. */
export const DEFAULT_TOOL_OUTPUT_CHARS = 2000;
/** Largest file `read_file` reads. */
const READ_MAX_BYTES = 256 * 1024;

const fn = (name: ToolName, description: string, properties: Record<string, { type: 'string'; description: string }>) => ({
  type: 'function' as const,
  function: {
    name,
    description,
    parameters: { type: 'object', properties, required: Object.keys(properties), additionalProperties: false },
  },
});

/** Each tool's definition, as offered in a request's `tools`. */
export const TOOL_DEFINITIONS: Readonly<Record<ToolName, ChatCompletionFunctionTool>> = Object.freeze({
  bash: fn('bash', 'Run a shell command in the workspace and see its output.', {
    command: { type: 'string', description: 'The command, run with sh -c in the workspace.' },
  }),
  read_file: fn('read_file', 'Read a text file of the workspace.', {
    path: { type: 'string', description: 'The file, relative to the workspace.' },
  }),
  write_file: fn('write_file', 'Write a text file in the workspace (folders are made as needed).', {
    path: { type: 'string', description: 'The file, relative to the workspace.' },
    content: { type: 'string', description: 'The whole text of the file.' },
  }),
  python: fn('python', 'Run Python 3 code in the workspace and see what it prints.', {
    code: { type: 'string', description: 'The program; print what you want to see.' },
  }),
});

/** The definitions of a task's tools, in its order. */
export const toolDefinitions = (names: readonly ToolName[]): ChatCompletionFunctionTool[] => names.map((n) => TOOL_DEFINITIONS[n]);

/** Text cut to `max` characters, with a note saying how much was left out. */
export function capOutput(text: string, max = DEFAULT_TOOL_OUTPUT_CHARS): string {
  if (text.length <= max) return text;
  return `${text.slice(0, max)}\n[output cut: ${max} of ${text.length} characters shown]`;
}

/** A command's result as the model sees it: its output, then how it ended unless it exited 0. */
export function describeExec(r: ExecResult, max = DEFAULT_TOOL_OUTPUT_CHARS): string {
  const out = r.stdout + (r.stderr && r.stdout && !r.stdout.endsWith('\n') ? '\n' : '') + r.stderr;
  const shown = out.trim() === '' ? '(no output)' : capOutput(out.replace(/\n$/, ''), max);
  const cut = r.truncated ? '\n[output cut at the sandbox’s output limit]' : '';
  return r.exitCode === 0 && !r.timedOut ? `${shown}${cut}` : `${shown}${cut}\n(${endOf(r)})`;
}

/** Options of {@link runTool}. */
export interface RunToolOptions {
  /** Limits of a command tool, over the sandbox's. @default the sandbox's */
  limits?: Partial<SandboxLimits>;
  /** Aborts the tool's command (TS_ERR_ABORTED is thrown). */
  signal?: AbortSignal;
  /** Characters of output returned. @default 2000 */
  maxChars?: number;
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v);

function stringArg(args: Record<string, unknown>, tool: string, key: string): string {
  const v = args[key];
  if (typeof v !== 'string') throw new ToolInputError(`${tool} needs a string "${key}"`);
  return v;
}

/** Sandbox errors that a model's call caused: reported back to it. */
const MODEL_MISTAKES: ReadonlySet<string> = new Set([ErrorCodes.INVALID_INPUT, ErrorCodes.NOT_FOUND, ErrorCodes.TOO_LARGE]);

/** A call the model got wrong: reported back to it, not raised. */
class ToolInputError extends Error {}

/**
 * Runs one tool call in the sandbox; returns what the model sees. A call the model got wrong (an
 * unknown or unoffered tool, arguments that are not JSON or lack a field, a path outside the
 * workspace, a file that is not there) returns an `error: …` text for the model to read.
 * @throws TurnstreamError TS_ERR_ABORTED when `signal` aborts; errors of the sandbox itself
 */
export async function runTool(
  sandbox: Sandbox,
  offered: readonly ToolName[],
  name: string,
  rawArgs: string,
  options: RunToolOptions = {},
): Promise<string> {
  const max = options.maxChars ?? DEFAULT_TOOL_OUTPUT_CHARS;
  try {
    if (!(offered as readonly string[]).includes(name))
      throw new ToolInputError(`there is no tool "${name}" (tools: ${offered.join(', ') || 'none'})`);
    let args: unknown;
    try {
      args = rawArgs.trim() === '' ? {} : JSON.parse(rawArgs);
    } catch (err) {
      throw new ToolInputError(`the arguments are not valid JSON (${(err as Error).message})`);
    }
    if (!isObject(args)) throw new ToolInputError('the arguments must be a JSON object');
    const exec = { limits: options.limits, signal: options.signal };
    switch (name as ToolName) {
      case 'bash':
        return describeExec(await sandbox.sh(stringArg(args, name, 'command'), exec), max);
      case 'python':
        return describeExec(await sandbox.python(stringArg(args, name, 'code'), exec), max);
      case 'read_file': {
        const text = await sandbox.readFile(stringArg(args, name, 'path'), { maxBytes: READ_MAX_BYTES });
        return text === '' ? '(the file is empty)' : capOutput(text, max);
      }
      case 'write_file': {
        const path = stringArg(args, name, 'path');
        const content = stringArg(args, name, 'content');
        await sandbox.writeFile(path, content);
        return `wrote ${Buffer.byteLength(content)} bytes to ${path}`;
      }
    }
  } catch (err) {
    if (err instanceof ToolInputError) return `error: ${err.message}`;
    // A bad path, a missing or too large file is the model's mistake; an abort or a sandbox failure is not.
    if (err instanceof TurnstreamError && MODEL_MISTAKES.has(err.code)) return `error: ${err.message}`;
    throw err;
  }
  throw new TurnstreamError(ErrorCodes.INTERNAL, `tool ${name} has no runner`);
}
