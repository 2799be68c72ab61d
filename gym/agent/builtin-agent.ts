/**
 * The built-in agent: a small loop over the gateway's OpenAI API (docs/gym.md).
 *
 * Each step is one model call with the whole transcript. The task's tools are offered as OpenAI
 * `tools`; a reply's tool calls run in the sandbox and their results go back as `tool` messages.
 * A reply may instead act with fenced code blocks (```` ```bash ````, ```` ```sh ````,
 * ```` ```python ````, as mini-swe-agent does): they run in the sandbox, in order, and their
 * output is the next user message. A reply with no action is the final answer. The episode also
 * ends at `max_turns` calls, at the task's `timeout_s` (everything in flight is aborted) or at a
 * call that fails.
 */
import type OpenAI from 'openai';
import type { ChatCompletionMessageParam } from 'openai/resources/chat/completions';
import type { Sandbox, SandboxLimits } from '../sandbox/sandbox.ts';
import type { Task, ToolName } from '../tasks/task.ts';
import { parseCodeBlocks, type CodeBlock } from './code-blocks.ts';
import { aborted, episodeClock } from './episode-clock.ts';
import { callModel } from './gateway-client.ts';
import type { Episode, RolloutMetadata, SamplingOptions } from './rollout-types.ts';
import { DEFAULT_TOOL_OUTPUT_CHARS, describeExec, runTool, toolDefinitions } from './tools.ts';

/** Sampling where the options say nothing: the reference's temperature over the whole distribution (top-p 1). */
export const DEFAULT_SAMPLING: Readonly<{ temperature: number; topP: number; maxTokens: number }> = Object.freeze({
  temperature: 0.7,
  topP: 1,
  maxTokens: 256,
});

/** A code block, as the system prompt shows one. */
const block = (language: string, code: string): string => `\`\`\`${language}\n${code}\n\`\`\``;

/**
 * The default system prompt of a task with tools: how to act, with one example, in few words (the
 * model may have 135M parameters). Answer-only tasks get none: the gateway's default applies.
 */
export function defaultSystemPrompt(tools: readonly ToolName[]): string | null {
  if (tools.length === 0) return null;
  const end = 'You will see the output. When the task is done, reply without a code block.';
  if (tools.includes('bash')) {
    const python = tools.includes('python') ? 'To run Python, use a python code block. ' : '';
    return `You are a helpful assistant with a Linux shell. To run a command, write it in a bash code block, like this:\n${block('bash', 'ls')}\n${python}${end}`;
  }
  if (tools.includes('python'))
    return `You are a helpful assistant with Python. To run Python, write it in a python code block, like this:\n${block('python', 'print(2 + 3)')}\n${end}`;
  return 'You are a helpful assistant with files in a workspace. Use the tools to read and write them. When the task is done, reply with your answer.';
}

/** What the loop needs. */
export interface BuiltinAgentContext {
  task: Task;
  sandbox: Sandbox;
  /** An OpenAI client bound to the rollout (its headers; see gateway-client.ts). */
  client: OpenAI;
  model: string;
  metadata: RolloutMetadata;
  sampling?: SamplingOptions;
  /** null: no system message; undefined: {@link defaultSystemPrompt}. */
  systemPrompt?: string | null;
  toolLimits?: Partial<SandboxLimits>;
  /** @default 2000 */
  toolOutputChars?: number;
  /** The caller's abort (Ctrl-C): the episode stops and the call rejects with TS_ERR_ABORTED. */
  signal?: AbortSignal;
}

/** Which blocks of a reply run: those whose tool the task offers. */
function actions(blocks: CodeBlock[], tools: readonly ToolName[]): CodeBlock[] {
  return blocks.filter((b) => tools.includes(b.language === 'bash' ? 'bash' : 'python'));
}

/** The next user message after a reply's code blocks ran. */
function observation(outputs: Array<{ block: CodeBlock; text: string }>): string {
  return outputs
    .map(({ block, text }, i) => {
      const name = outputs.length > 1 ? `block ${i + 1} (${block.language})` : `the ${block.language} block`;
      return `Output of ${name}:\n\`\`\`\n${text}\n\`\`\``;
    })
    .join('\n\n');
}

const errorText = (err: unknown): string => (err instanceof Error ? err.message : String(err));

/**
 * Plays one episode of a task in its sandbox. Resolves with the transcript however the episode
 * ended (a failed call is `stoppedBy: 'error'`).
 * @throws TurnstreamError TS_ERR_ABORTED when the caller's signal aborts
 */
export async function runBuiltinAgent(ctx: BuiltinAgentContext): Promise<Episode> {
  const { task, sandbox } = ctx;
  const sampling = { ...DEFAULT_SAMPLING, ...ctx.sampling };
  const maxChars = ctx.toolOutputChars ?? DEFAULT_TOOL_OUTPUT_CHARS;
  const system = ctx.systemPrompt === undefined ? defaultSystemPrompt(task.tools) : ctx.systemPrompt;
  const messages: ChatCompletionMessageParam[] = [
    ...(system ? [{ role: 'system' as const, content: system }] : []),
    { role: 'user', content: task.instruction },
  ];
  const tools = toolDefinitions(task.tools);
  const ep: Episode = {
    turnIds: [],
    policyVersions: [],
    messages,
    finalAnswer: null,
    steps: 0,
    stoppedBy: 'max_turns',
    generationMs: 0,
    toolMs: 0,
  };
  const clock = episodeClock(task.timeoutS * 1000, ctx.signal);
  const exec = { limits: ctx.toolLimits, signal: clock.signal, maxChars };
  const timed = async <T>(work: () => Promise<T>): Promise<T> => {
    const t0 = performance.now();
    try {
      return await work();
    } finally {
      ep.toolMs += Math.round(performance.now() - t0);
    }
  };
  try {
    while (ep.steps < task.maxTurns) {
      const step = ep.steps++;
      const t0 = performance.now();
      let call;
      try {
        call = await callModel(
          ctx.client,
          {
            model: ctx.model,
            messages,
            ...(tools.length ? { tools } : {}),
            temperature: sampling.temperature,
            max_tokens: sampling.maxTokens,
            ...(sampling.topP !== undefined ? { top_p: sampling.topP } : {}),
            ...(sampling.seed !== undefined ? { seed: sampling.seed + step } : {}),
            metadata: ctx.metadata,
          },
          clock.signal,
        );
      } finally {
        ep.generationMs += Math.round(performance.now() - t0);
      }
      ep.turnIds.push(call.turnId);
      ep.policyVersions.push(call.policyVersion);
      const { content, tool_calls: toolCalls } = call.message;
      const text = content ?? '';
      messages.push({ role: 'assistant', content, ...(toolCalls?.length ? { tool_calls: toolCalls } : {}) });
      ep.finalAnswer = text;
      if (toolCalls?.length) {
        for (const tc of toolCalls) {
          const result =
            tc.type === 'function'
              ? await timed(() => runTool(sandbox, task.tools, tc.function.name, tc.function.arguments ?? '', exec))
              : `error: only function tools are offered`;
          messages.push({ role: 'tool', tool_call_id: tc.id, content: result });
        }
        continue;
      }
      const blocks = task.tools.length ? actions(parseCodeBlocks(text, { acceptUnclosed: call.finishReason === 'stop' }), task.tools) : [];
      if (blocks.length === 0) {
        ep.stoppedBy = 'answer';
        break;
      }
      const outputs: Array<{ block: CodeBlock; text: string }> = [];
      for (const block of blocks) {
        const r = await timed(() => (block.language === 'bash' ? sandbox.sh(block.code, exec) : sandbox.python(block.code, exec)));
        outputs.push({ block, text: describeExec(r, maxChars) });
      }
      messages.push({ role: 'user', content: observation(outputs) });
    }
  } catch (err) {
    if (clock.callerAborted()) throw aborted();
    if (clock.timedOut()) {
      ep.stoppedBy = 'timeout';
    } else {
      ep.stoppedBy = 'error';
      ep.error = errorText(err);
    }
  } finally {
    clock.dispose();
  }
  return ep;
}
