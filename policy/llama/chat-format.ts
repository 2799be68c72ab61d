/**
 * How a Llama-family model sees a conversation: OpenAI-style messages and tools rendered with
 * the model's own chat template (the Jinja template in its GGUF, run by node-llama-cpp's
 * JinjaTemplateChatWrapper, which also reads the template's tool-call syntax), tokenized with
 * the model's tokenizer, and the model's output parsed back into text and tool calls.
 *
 * The gateway renders requests and the OPD teacher renders hinted prompts with the same
 * ChatFormat, so the two differ only by the hint.
 *
 * Prompts that do not fit are cut by one documented policy, never refused: first the oldest
 * exchanges (a user message and what followed it) go, keeping system messages and the last
 * exchange; then the middle of the longest remaining message is cut out (its head and tail stay,
 * joined by a marker), until the prompt fits.
 */
import { randomBytes } from 'node:crypto';
import {
  JinjaTemplateChatWrapper,
  LlamaText,
  type ChatHistoryItem,
  type ChatModelFunctionCall,
  type ChatModelFunctions,
  type ChatModelResponse,
  type LlamaModel as NodeLlamaModel,
  type Token,
} from 'node-llama-cpp';
import type { ChatMessage, ToolCall } from '../../schemas/index.ts';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';

export interface ChatFormatOptions {
  /** The Jinja chat template. @default the model's `tokenizer.chat_template` */
  template?: string;
  /**
   * System prompt added when a conversation has none. Some small models answer much worse under
   * their template's own default system prompt. @default undefined (the template's behaviour)
   */
  defaultSystemPrompt?: string;
}

/** An OpenAI `tools` entry (only function tools are rendered). */
export interface OpenAITool {
  type?: string;
  function?: { name?: string; description?: string; parameters?: unknown };
}

export interface RenderedChat {
  tokens: number[];
  /** Tokens the fitting policy removed (0 when the prompt fit). */
  truncatedTokens: number;
}

export interface ParsedOutput {
  content: string | null;
  toolCalls: ToolCall[];
}

const CUT_MARKER = '\n[…]\n';

const isRecord = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

/** Text of a node-llama-cpp template fragment (string, LlamaText or its JSON). */
function fragment(v: unknown): string {
  if (v === undefined || v === null) return '';
  if (typeof v === 'string') return v;
  return LlamaText(v as never).toString();
}

export class ChatFormat {
  private readonly wrapper: JinjaTemplateChatWrapper;
  private readonly call: { prefix: string; paramsPrefix: string; suffix: string; between: string };
  private readonly addBos: boolean;

  constructor(
    private readonly model: NodeLlamaModel,
    private readonly opts: ChatFormatOptions = {},
  ) {
    const template = opts.template ?? model.fileInfo.metadata.tokenizer?.chat_template;
    if (typeof template !== 'string' || !template.trim()) {
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, 'the model has no chat template (tokenizer.chat_template); give one', {
        param: 'template',
      });
    }
    this.wrapper = new JinjaTemplateChatWrapper({ template, trimLeadingWhitespaceInResponses: false });
    const f = this.wrapper.settings.functions;
    this.call = {
      prefix: fragment(f.call.prefix),
      paramsPrefix: fragment(f.call.paramsPrefix),
      suffix: fragment(f.call.suffix),
      between: fragment(f.parallelism?.call?.betweenCalls),
    };
    this.addBos = model.fileInfo.metadata.tokenizer?.ggml?.add_bos_token === true;
  }

  /** The text that opens a tool call in the model's output (for stream hold-back). */
  get toolCallPrefix(): string {
    return this.call.prefix.trimStart();
  }

  private history(messages: readonly ChatMessage[]): ChatHistoryItem[] {
    const items: ChatHistoryItem[] = [];
    const calls = new Map<string, ChatModelFunctionCall>();
    if (this.opts.defaultSystemPrompt && !messages.some((m) => m.role === 'system' || m.role === 'developer')) {
      items.push({ type: 'system', text: this.opts.defaultSystemPrompt });
    }
    for (const m of messages) {
      const text = m.content ?? '';
      if (m.role === 'system' || m.role === 'developer') items.push({ type: 'system', text });
      else if (m.role === 'assistant') {
        const response: ChatModelResponse['response'] = text ? [text] : [];
        for (const tc of m.toolCalls) {
          const call: ChatModelFunctionCall = { type: 'functionCall', name: tc.name, params: parseJson(tc.arguments), result: '' };
          response.push(call);
          if (tc.id) calls.set(tc.id, call);
        }
        items.push({ type: 'model', response });
      } else if (m.role === 'tool') {
        const call = (m.toolCallId ? calls.get(m.toolCallId) : undefined) ?? lastOpenCall(items);
        if (call) call.result = parseJson(text);
        else items.push({ type: 'user', text });
      } else items.push({ type: 'user', text });
    }
    // The answer continues the last model item (after tool results, or a prefilled reply).
    if (items[items.length - 1]?.type !== 'model') items.push({ type: 'model', response: [] });
    return items;
  }

  private functions(tools: readonly OpenAITool[] | null): ChatModelFunctions | undefined {
    if (!tools || tools.length === 0) return undefined;
    const out: Record<string, { description?: string; params?: never }> = {};
    for (const t of tools) {
      const fn = t.function;
      if (!isRecord(fn) || typeof fn.name !== 'string' || !fn.name) continue;
      out[fn.name] = {
        ...(typeof fn.description === 'string' ? { description: fn.description } : {}),
        ...(isRecord(fn.parameters) ? { params: fn.parameters as never } : {}),
      };
    }
    return Object.keys(out).length > 0 ? out : undefined;
  }

  /** Renders and tokenizes the conversation, with no fitting. */
  tokenize(messages: readonly ChatMessage[], tools: readonly OpenAITool[] | null = null): number[] {
    const state = this.wrapper.generateContextState({
      chatHistory: this.history(messages),
      availableFunctions: this.functions(tools),
      documentFunctionParams: true,
    });
    const tokens = state.contextText.tokenize(this.model.tokenizer) as number[];
    const bos = this.model.tokens.bos;
    if (this.addBos && bos !== null && tokens[0] !== bos) tokens.unshift(bos);
    return tokens;
  }

  /** Renders within `budget` tokens by the fitting policy (see the file comment). */
  render(messages: readonly ChatMessage[], tools: readonly OpenAITool[] | null, budget: number): RenderedChat {
    const full = this.tokenize(messages, tools);
    if (full.length <= budget) return { tokens: full, truncatedTokens: 0 };
    let msgs = [...messages];
    // 1. Drop the oldest exchanges, keeping system messages and the last exchange.
    for (;;) {
      const firstUser = msgs.findIndex((m) => m.role === 'user');
      const nextUser = msgs.findIndex((m, i) => i > firstUser && m.role === 'user');
      if (firstUser < 0 || nextUser < 0) break;
      msgs = msgs.filter((m, i) => (i < firstUser ? true : i >= nextUser || m.role === 'system' || m.role === 'developer'));
      const t = this.tokenize(msgs, tools);
      if (t.length <= budget) return { tokens: t, truncatedTokens: full.length - t.length };
    }
    // 2. Cut the middle of the longest message, as little as fits (binary search on what stays).
    for (let round = 0; round < 4; round++) {
      let longest = -1;
      msgs.forEach((m, i) => {
        if ((m.content?.length ?? 0) > (msgs[longest]?.content?.length ?? 0)) longest = i;
      });
      const text = msgs[longest]?.content ?? '';
      if (longest < 0 || text.length <= CUT_MARKER.length) break;
      const withKept = (keep: number): ChatMessage[] => {
        const head = Math.floor(keep / 3);
        const copy = [...msgs];
        copy[longest] = { ...msgs[longest], content: text.slice(0, head) + CUT_MARKER + text.slice(text.length - (keep - head)) };
        return copy;
      };
      let lo = 0;
      let hi = text.length - 1;
      if (this.tokenize(withKept(0), tools).length > budget) {
        msgs = withKept(0);
        continue;
      }
      while (lo < hi) {
        const mid = Math.ceil((lo + hi) / 2);
        if (this.tokenize(withKept(mid), tools).length <= budget) lo = mid;
        else hi = mid - 1;
      }
      const t = this.tokenize(withKept(lo), tools);
      return { tokens: t, truncatedTokens: full.length - t.length };
    }
    const last = this.tokenize(msgs, tools);
    if (last.length <= budget) return { tokens: last, truncatedTokens: full.length - last.length };
    // Tool definitions or the template itself exceed the budget: keep the prompt's end.
    const tail = last.slice(last.length - budget);
    return { tokens: tail, truncatedTokens: full.length - tail.length };
  }

  /** Splits generated text into content and the tool calls in the template's syntax. */
  parse(text: string): ParsedOutput {
    const { paramsPrefix, suffix, between } = this.call;
    const prefix = this.toolCallPrefix;
    if (!prefix || !suffix) return { content: text, toolCalls: [] };
    const start = text.indexOf(prefix);
    if (start < 0) return { content: text, toolCalls: [] };
    const toolCalls: ToolCall[] = [];
    let pos = start;
    while (text.startsWith(prefix, pos)) {
      const nameStart = pos + prefix.length;
      const nameEnd = paramsPrefix ? text.indexOf(paramsPrefix, nameStart) : -1;
      if (nameEnd < 0) break;
      const name = text.slice(nameStart, nameEnd).trim();
      const argsStart = nameEnd + paramsPrefix.length;
      let end = text.indexOf(suffix, argsStart);
      let args: string | null = null;
      while (end >= 0) {
        const candidate = text.slice(argsStart, end).trim();
        if (parseJson(candidate) !== candidate || candidate === '') {
          args = candidate || '{}';
          break;
        }
        end = text.indexOf(suffix, end + 1);
      }
      if (args === null || end < 0 || !name) break;
      toolCalls.push({ id: `call_${randomBytes(12).toString('hex')}`, type: 'function', name, arguments: args });
      pos = end + suffix.length;
      if (between && text.startsWith(between, pos)) pos += between.length;
      while (pos < text.length && /\s/.test(text[pos])) pos++;
    }
    if (toolCalls.length === 0) return { content: text, toolCalls: [] };
    const content = text.slice(0, start).trim();
    return { content: content || null, toolCalls };
  }

  /** Token text for logs and `logprobs` (special tokens shown by their text). */
  tokenText(token: number): string {
    return this.model.detokenize([token as Token], true);
  }
}

function lastOpenCall(items: ChatHistoryItem[]): ChatModelFunctionCall | undefined {
  const last = items[items.length - 1];
  if (!last || last.type !== 'model') return undefined;
  for (const r of last.response) if (typeof r === 'object' && r.type === 'functionCall' && r.result === '') return r;
  return undefined;
}
