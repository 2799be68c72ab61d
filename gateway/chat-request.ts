/**
 * Validation of `POST /v1/chat/completions` bodies: every bad input becomes a
 * `TurnstreamError(INVALID_INPUT)` naming the offending field (OpenAI's `param`), which the
 * error handler turns into a 400 in OpenAI's error shape.
 */
import type { ChatMessage, ToolCall } from '../schemas/index.ts';
import { invalidInput } from '../core/index.ts';
import { flattenContent, wellFormed } from './content.ts';
import { parseResponseFormat, type ResponseFormat } from './response-format.ts';
import { parseTruthy } from './request-values.ts';

/** Body fields turnstream understands that are not OpenAI's: stripped before an upstream sees them. */
export const NON_STANDARD_FIELDS = ['session_id', 'turn_type', 'session_done'] as const;

/** Every request field of OpenAI's chat completions reference (docs/api.md has what each does here). */
export const CHAT_FIELDS: ReadonlySet<string> = new Set([
  'messages',
  'model',
  'audio',
  'frequency_penalty',
  'function_call',
  'functions',
  'logit_bias',
  'logprobs',
  'max_completion_tokens',
  'max_tokens',
  'metadata',
  'modalities',
  'moderation',
  'n',
  'parallel_tool_calls',
  'prediction',
  'presence_penalty',
  'prompt_cache_key',
  'prompt_cache_options',
  'prompt_cache_retention',
  'reasoning_effort',
  'response_format',
  'safety_identifier',
  'seed',
  'service_tier',
  'stop',
  'store',
  'stream',
  'stream_options',
  'temperature',
  'tool_choice',
  'tools',
  'top_logprobs',
  'top_p',
  'user',
  'verbosity',
  'web_search_options',
]);

/** Most choices one call may ask for (`n`), as OpenAI. */
export const MAX_N = 128;

/** Most alternatives per position a request may ask for (`top_logprobs`), as OpenAI. */
export const MAX_TOP_LOGPROBS = 20;

export const KNOWN_ROLES = new Set(['system', 'developer', 'user', 'assistant', 'tool']);

/** Most messages in one request, as OpenAI. */
export const MAX_MESSAGES = 2048;
/** Most tools in one request, as OpenAI. */
export const MAX_TOOLS = 128;
/** OpenAI's bounds on `metadata`: pairs, key and value length. */
export const MAX_METADATA_PAIRS = 16;
export const MAX_METADATA_KEY = 64;
export const MAX_METADATA_VALUE = 512;
/** Longest `user`, as the gateway's other ids. */
export const MAX_USER_CHARS = 256;
const FUNCTION_NAME = /^[a-zA-Z0-9_-]{1,64}$/;

export interface ChatRequestLimits {
  /** Largest accepted `max_tokens` / `max_completion_tokens`. @default 262144 */
  maxTokensLimit?: number;
  /** Most messages in one request. @default MAX_MESSAGES (2048) */
  maxMessages?: number;
  /**
   * Content part types turnstream does not know are kept (as placeholders in the Turn) and left
   * to the engine, an upstream that may understand them; else they are a 400. @default false
   */
  passThroughContent?: boolean;
}

/** A validated chat request. */
export interface ChatRequest {
  model: string;
  /** Messages with content flattened to text; tool calls kept. */
  messages: ChatMessage[];
  tools: unknown[] | null;
  toolChoice: unknown;
  stream: boolean;
  /** `stream_options.include_usage`. */
  includeUsage: boolean;
  temperature: number | null;
  topP: number | null;
  /** `max_completion_tokens`, else `max_tokens`. */
  maxTokens: number | null;
  stop: string[];
  seed: number | null;
  /** OpenAI `logprobs`: the client wants each answer token's log-prob back. */
  logprobs: boolean;
  /** OpenAI `top_logprobs` (0..20, only with `logprobs`): alternatives per position. */
  topLogprobs: number | null;
  /** OpenAI `user`. */
  user: string | null;
  /** OpenAI `metadata`: at most 16 string pairs (a gym rollout's task, group and index). */
  metadata: Record<string, string>;
  /** Body fallbacks of the X-Session-Id / X-Turn-Type / X-Session-Done headers. */
  bodySessionId: string | null;
  bodyTurnType: string | null;
  bodySessionDone: unknown;
  /** The body as received minus turnstream's non-standard fields (what a proxy forwards). */
  upstreamBody: Record<string, unknown>;
  /** OpenAI `n`: choices to generate, each its own Turn. @default 1 */
  n?: number;
  /** OpenAI `response_format`. @default text */
  responseFormat?: ResponseFormat;
  /** OpenAI `presence_penalty` (−2…2); null or absent: none. */
  presencePenalty?: number | null;
  /** OpenAI `frequency_penalty` (−2…2); null or absent: none. */
  frequencyPenalty?: number | null;
  /** OpenAI `logit_bias` as [token id, bias] pairs; empty or absent: none. */
  logitBias?: Array<[number, number]>;
  /** OpenAI `parallel_tool_calls`. @default true */
  parallelToolCalls?: boolean;
  /** OpenAI `reasoning_effort`, `verbosity`, `service_tier` as sent (null when absent): each engine decides. */
  reasoningEffort?: string | null;
  verbosity?: string | null;
  serviceTier?: string | null;
  /** Body fields that are neither OpenAI's nor turnstream's: an engine that does not forward them refuses them. */
  unknownFields?: string[];
  /** A prompt of its own (`/v1/completions`): the engine uses it instead of rendering `messages`. */
  prompt?: RawPrompt | null;
  /** `/v1/completions` `echo`: the prompt comes back before the answer. @default false */
  echo?: boolean;
  /** `/v1/completions` `suffix` (text after the insertion); null or absent: none. */
  suffix?: string | null;
}

/** A prompt given as text or as token ids of the served model. */
export type RawPrompt = { text: string } | { tokens: number[] };

const isObj = (v: unknown): v is Record<string, unknown> => !!v && typeof v === 'object' && !Array.isArray(v);

function optNumber(body: Record<string, unknown>, key: string, min: number, max: number, integer = false): number | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'number' || !Number.isFinite(v)) throw invalidInput(`${key} must be a number`, key);
  if (integer && !Number.isInteger(v)) throw invalidInput(`${key} must be an integer`, key);
  if (v < min || v > max) throw invalidInput(`${key} must be between ${min} and ${max}, got ${v}`, key);
  return v;
}

/** JSON's name for the type of `v`, as OpenAI's "got a string instead" messages use. */
function jsonType(v: unknown): string {
  if (Array.isArray(v)) return 'an array';
  if (typeof v === 'object') return 'an object';
  if (typeof v === 'number') return Number.isInteger(v) ? 'an integer' : 'a decimal';
  return `a ${typeof v}`;
}

/** `logprobs` and `top_logprobs`, validated with OpenAI's messages. */
function parseLogprobs(body: Record<string, unknown>): { logprobs: boolean; topLogprobs: number | null } {
  const lp = body.logprobs;
  if (lp !== undefined && lp !== null && typeof lp !== 'boolean') {
    throw invalidInput(`Invalid type for 'logprobs': expected a boolean, but got ${jsonType(lp)} instead.`, 'logprobs');
  }
  const top = body.top_logprobs;
  if (top === undefined || top === null) return { logprobs: lp === true, topLogprobs: null };
  if (typeof top !== 'number' || !Number.isInteger(top)) {
    throw invalidInput(`Invalid type for 'top_logprobs': expected an integer, but got ${jsonType(top)} instead.`, 'top_logprobs');
  }
  if (top < 0)
    throw invalidInput(
      `Invalid 'top_logprobs': integer below minimum value. Expected a value >= 0, but got ${top} instead.`,
      'top_logprobs',
    );
  if (top > MAX_TOP_LOGPROBS) {
    throw invalidInput(
      `Invalid 'top_logprobs': integer above maximum value. Expected a value <= ${MAX_TOP_LOGPROBS}, but got ${top} instead.`,
      'top_logprobs',
    );
  }
  if (lp !== true)
    throw invalidInput("Invalid value for 'top_logprobs': 'logprobs' must be set to true when 'top_logprobs' is given.", 'top_logprobs');
  return { logprobs: true, topLogprobs: top };
}

/** OpenAI's `metadata`: an object of at most 16 string values, keys ≤ 64 and values ≤ 512 characters. */
function parseMetadata(v: unknown): Record<string, string> {
  if (v === undefined || v === null) return {};
  if (!isObj(v)) throw invalidInput(`Invalid type for 'metadata': expected an object, but got ${jsonType(v)} instead.`, 'metadata');
  const entries = Object.entries(v);
  if (entries.length > MAX_METADATA_PAIRS) {
    throw invalidInput(`Invalid 'metadata': at most ${MAX_METADATA_PAIRS} pairs, got ${entries.length}.`, 'metadata');
  }
  for (const [k, val] of entries) {
    if (k.length > MAX_METADATA_KEY)
      throw invalidInput(`Invalid 'metadata': key ${JSON.stringify(k.slice(0, 80))} is over ${MAX_METADATA_KEY} characters.`, 'metadata');
    if (typeof val !== 'string')
      throw invalidInput(`Invalid type for 'metadata.${k}': expected a string, but got ${jsonType(val)} instead.`, `metadata.${k}`);
    if (val.length > MAX_METADATA_VALUE)
      throw invalidInput(`Invalid 'metadata.${k}': over ${MAX_METADATA_VALUE} characters.`, `metadata.${k}`);
    wellFormed(k, 'metadata');
    wellFormed(val, `metadata.${k}`);
  }
  return Object.fromEntries(entries) as Record<string, string>;
}

function parseToolCalls(v: unknown, param: string): ToolCall[] {
  if (v === undefined || v === null) return [];
  if (!Array.isArray(v)) throw invalidInput(`${param} must be an array`, param);
  return v.map((tc, i) => {
    const p = `${param}[${i}]`;
    if (!isObj(tc)) throw invalidInput(`${p} must be an object`, p);
    const fn = tc.function;
    if (!isObj(fn) || typeof fn.name !== 'string') throw invalidInput(`${p}.function.name must be a string`, `${p}.function.name`);
    const args = fn.arguments ?? '';
    return {
      id: typeof tc.id === 'string' ? tc.id : '',
      type: typeof tc.type === 'string' ? tc.type : 'function',
      name: wellFormed(fn.name, `${p}.function.name`),
      arguments: wellFormed(typeof args === 'string' ? args : JSON.stringify(args), `${p}.function.arguments`),
    };
  });
}

function parseMessage(m: unknown, i: number, passThrough: boolean): ChatMessage {
  const p = `messages[${i}]`;
  if (!isObj(m)) throw invalidInput(`${p} must be an object`, p);
  if (typeof m.role !== 'string') throw invalidInput(`${p}.role must be a string`, `${p}.role`);
  if (!KNOWN_ROLES.has(m.role)) {
    throw invalidInput(`${p}.role ${JSON.stringify(m.role)} is not one of ${[...KNOWN_ROLES].join(', ')}`, `${p}.role`);
  }
  const content = flattenContent(m.content, `${p}.content`, { passThrough });
  const toolCalls = m.role === 'assistant' ? parseToolCalls(m.tool_calls, `${p}.tool_calls`) : [];
  if (content === null && toolCalls.length === 0 && m.role !== 'assistant') {
    throw invalidInput(`${p}.content is required for role ${m.role}`, `${p}.content`);
  }
  if (m.name !== undefined && m.name !== null && typeof m.name !== 'string') throw invalidInput(`${p}.name must be a string`, `${p}.name`);
  const toolCallId = m.tool_call_id;
  if (toolCallId !== undefined && toolCallId !== null && typeof toolCallId !== 'string') {
    throw invalidInput(`${p}.tool_call_id must be a string`, `${p}.tool_call_id`);
  }
  return {
    role: m.role,
    content,
    name: typeof m.name === 'string' ? m.name : null,
    toolCallId: typeof toolCallId === 'string' ? toolCallId : null,
    toolCalls,
  };
}

/** `tools`: function tools with valid names, at most MAX_TOOLS. Returns their names. */
function parseTools(v: unknown): { tools: unknown[] | null; names: Set<string> } {
  const names = new Set<string>();
  if (v === undefined || v === null) return { tools: null, names };
  if (!Array.isArray(v)) throw invalidInput('tools must be an array', 'tools');
  if (v.length > MAX_TOOLS) {
    throw invalidInput(
      `Invalid 'tools': array too long. Expected an array with maximum length ${MAX_TOOLS}, but got an array with length ${v.length} instead.`,
      'tools',
    );
  }
  v.forEach((t, i) => {
    const p = `tools[${i}]`;
    if (!isObj(t)) throw invalidInput(`${p} must be an object`, p);
    if (t.type !== undefined && t.type !== 'function')
      throw invalidInput(`Invalid value: ${JSON.stringify(t.type)}. Supported values are: 'function'.`, `${p}.type`);
    const fn = t.function;
    if (!isObj(fn)) throw invalidInput(`Missing required parameter: '${p}.function'.`, `${p}.function`);
    if (typeof fn.name !== 'string' || !FUNCTION_NAME.test(fn.name)) {
      throw invalidInput(
        `Invalid '${p}.function.name': expected a string that matches the pattern '^[a-zA-Z0-9_-]{1,64}$'.`,
        `${p}.function.name`,
      );
    }
    if (fn.parameters !== undefined && fn.parameters !== null && !isObj(fn.parameters)) {
      throw invalidInput(`Invalid '${p}.function.parameters': expected an object (a JSON Schema).`, `${p}.function.parameters`);
    }
    names.add(fn.name);
  });
  return { tools: v.length > 0 ? v : null, names };
}

/** `tool_choice`: none / auto / required, or a function that is one of `tools`. */
function checkToolChoice(v: unknown, names: Set<string>): void {
  if (v === undefined || v === null) return;
  if (v === 'none') return;
  if (v === 'auto' || v === 'required' || isObj(v)) {
    if (names.size === 0)
      throw invalidInput("Invalid value for 'tool_choice': 'tool_choice' is only allowed when 'tools' are specified.", 'tool_choice');
    if (typeof v === 'string') return;
    const fn = v.function;
    if (v.type !== 'function' || !isObj(fn) || typeof fn.name !== 'string') {
      throw invalidInput('Invalid \'tool_choice\': expected {"type": "function", "function": {"name": ...}}.', 'tool_choice');
    }
    if (!names.has(fn.name))
      throw invalidInput(`Invalid value for 'tool_choice': no function named ${JSON.stringify(fn.name)} in 'tools'.`, 'tool_choice');
    return;
  }
  throw invalidInput(
    `Invalid value for 'tool_choice': ${JSON.stringify(v)?.slice(0, 64)}. Supported values are: 'none', 'auto', 'required', or a function.`,
    'tool_choice',
  );
}

/** `logit_bias`: token ids (as strings) → a bias in [-100, 100]; returned as [id, bias] pairs. */
function parseLogitBias(v: unknown): Array<[number, number]> {
  if (v === undefined || v === null) return [];
  if (!isObj(v)) throw invalidInput(`Invalid type for 'logit_bias': expected an object, but got ${jsonType(v)} instead.`, 'logit_bias');
  for (const [k, b] of Object.entries(v)) {
    if (!/^\d{1,9}$/.test(k))
      throw invalidInput(`Invalid 'logit_bias': keys must be token ids (integers), got ${JSON.stringify(k.slice(0, 32))}.`, 'logit_bias');
    if (typeof b !== 'number' || !Number.isFinite(b) || b < -100 || b > 100) {
      throw invalidInput(
        `Invalid 'logit_bias': the bias of token ${k} must be a number between -100 and 100, got ${JSON.stringify(b)?.slice(0, 32)}.`,
        'logit_bias',
      );
    }
  }
  return Object.entries(v).map(([k, b]) => [Number(k), b as number]);
}

/** Validates a parsed JSON body; throws `TurnstreamError(INVALID_INPUT)` on the first problem. */
export function parseChatRequest(body: unknown, limits: ChatRequestLimits = {}): ChatRequest {
  const maxTokensLimit = limits.maxTokensLimit ?? 262_144;
  const maxMessages = limits.maxMessages ?? MAX_MESSAGES;
  if (!isObj(body)) throw invalidInput('the request body must be a JSON object');
  if (body.model !== undefined && typeof body.model !== 'string') throw invalidInput('model must be a string', 'model');
  if (!Array.isArray(body.messages)) throw invalidInput('messages must be an array of messages', 'messages');
  if (body.messages.length === 0) throw invalidInput('messages must contain at least one message', 'messages');
  if (body.messages.length > maxMessages) {
    throw invalidInput(
      `Invalid 'messages': array too long. Expected an array with maximum length ${maxMessages}, but got an array with length ${body.messages.length} instead.`,
      'messages',
    );
  }
  const messages = body.messages.map((m, i) => parseMessage(m, i, limits.passThroughContent ?? false));

  const { tools, names } = parseTools(body.tools);
  checkToolChoice(body.tool_choice, names);
  refuseUnrelayable(body);
  checkAccepted(body);
  const common = parseCommon(body, maxTokensLimit, 1, CHAT_FIELDS);
  const { logprobs, topLogprobs } = parseLogprobs(body);
  const maxCompletion = optNumber(body, 'max_completion_tokens', 1, maxTokensLimit, true);
  if (body.parallel_tool_calls !== undefined && body.parallel_tool_calls !== null && typeof body.parallel_tool_calls !== 'boolean') {
    throw invalidInput(
      `Invalid type for 'parallel_tool_calls': expected a boolean, but got ${jsonType(body.parallel_tool_calls)} instead.`,
      'parallel_tool_calls',
    );
  }
  return {
    ...common,
    maxTokens: maxCompletion ?? common.maxTokens,
    messages,
    tools,
    toolChoice: body.tool_choice ?? null,
    logprobs,
    topLogprobs,
    metadata: parseMetadata(body.metadata),
    responseFormat: parseResponseFormat(body.response_format),
    parallelToolCalls: body.parallel_tool_calls !== false,
    reasoningEffort: optEnum(body, 'reasoning_effort', ['none', 'minimal', 'low', 'medium', 'high', 'xhigh', 'max']),
    verbosity: optEnum(body, 'verbosity', ['low', 'medium', 'high']),
    serviceTier: optEnum(body, 'service_tier', ['auto', 'default', 'flex', 'scale', 'priority']),
  };
}

/** The fields chat and completions requests share, validated; `known` are the endpoint's OpenAI fields. */
export function parseCommon(
  body: Record<string, unknown>,
  maxTokensLimit: number,
  minTokens: number,
  known: ReadonlySet<string>,
): Omit<ChatRequest, 'messages' | 'tools' | 'toolChoice' | 'logprobs' | 'topLogprobs' | 'metadata'> {
  const n = optNumber(body, 'n', 1, MAX_N, true) ?? 1;
  const temperature = optNumber(body, 'temperature', 0, 2);
  const topP = optNumber(body, 'top_p', 0, 1);
  if (topP === 0) throw invalidInput('top_p must be greater than 0', 'top_p');
  const maxTokens = optNumber(body, 'max_tokens', minTokens, maxTokensLimit, true);
  const seed = optNumber(body, 'seed', Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER, true);
  const presencePenalty = optNumber(body, 'presence_penalty', -2, 2);
  const frequencyPenalty = optNumber(body, 'frequency_penalty', -2, 2);
  const stop = parseStop(body.stop);
  if (body.stream !== undefined && body.stream !== null && typeof body.stream !== 'boolean')
    throw invalidInput('stream must be a boolean', 'stream');
  const so = body.stream_options;
  if (so !== undefined && so !== null) {
    if (!isObj(so)) throw invalidInput('stream_options must be an object', 'stream_options');
    for (const k of ['include_usage', 'include_obfuscation']) {
      if (so[k] !== undefined && so[k] !== null && typeof so[k] !== 'boolean')
        throw invalidInput(`Invalid type for 'stream_options.${k}': expected a boolean.`, `stream_options.${k}`);
    }
  }
  const logitBias = parseLogitBias(body.logit_bias);
  if (body.user !== undefined && body.user !== null) {
    if (typeof body.user !== 'string') throw invalidInput('user must be a string', 'user');
    if (body.user.length > MAX_USER_CHARS) {
      throw invalidInput(
        `Invalid 'user': string too long. Expected a string with maximum length ${MAX_USER_CHARS}, but got a string with length ${body.user.length} instead.`,
        'user',
      );
    }
    wellFormed(body.user, 'user');
  }
  for (const k of ['session_id', 'turn_type'] as const) {
    if (body[k] !== undefined && body[k] !== null && typeof body[k] !== 'string') throw invalidInput(`${k} must be a string`, k);
    if (typeof body[k] === 'string') wellFormed(body[k], k);
  }
  if (body.session_done !== undefined) parseTruthy(body.session_done, 'session_done');
  const upstreamBody: Record<string, unknown> = { ...body };
  for (const k of NON_STANDARD_FIELDS) delete upstreamBody[k];
  const nonStandard: ReadonlySet<string> = new Set(NON_STANDARD_FIELDS);
  return {
    model: typeof body.model === 'string' && body.model ? body.model : '',
    stream: body.stream === true,
    includeUsage: isObj(so) && so.include_usage === true,
    temperature,
    topP,
    maxTokens,
    stop,
    seed,
    user: typeof body.user === 'string' && body.user ? body.user : null,
    bodySessionId: typeof body.session_id === 'string' && body.session_id ? body.session_id : null,
    bodyTurnType: typeof body.turn_type === 'string' && body.turn_type ? body.turn_type : null,
    bodySessionDone: body.session_done,
    upstreamBody,
    n,
    presencePenalty: presencePenalty === 0 ? null : presencePenalty,
    frequencyPenalty: frequencyPenalty === 0 ? null : frequencyPenalty,
    logitBias,
    unknownFields: Object.keys(body).filter((k) => !known.has(k) && !nonStandard.has(k)),
  };
}

/** `stop`: a string or at most 4 strings. */
function parseStop(v: unknown): string[] {
  if (v === undefined || v === null) return [];
  if (typeof v === 'string') return [v];
  if (Array.isArray(v)) {
    if (v.length > 4 || !v.every((s) => typeof s === 'string'))
      throw invalidInput('stop must be a string or an array of at most 4 strings', 'stop');
    return v as string[];
  }
  throw invalidInput('stop must be a string or an array of strings', 'stop');
}

/** A field that is null, absent or one of `values` (`param`: its name in the body). */
function optEnum(body: Record<string, unknown>, key: string, values: readonly string[], param = key): string | null {
  const v = body[key];
  if (v === undefined || v === null) return null;
  if (typeof v !== 'string' || !values.includes(v)) {
    throw invalidInput(
      `Invalid value for '${param}': ${JSON.stringify(v)?.slice(0, 64)}. Supported values are: ${values.map((x) => `'${x}'`).join(', ')}.`,
      param,
    );
  }
  return v;
}

/**
 * Fields whose answer the gateway cannot carry back, whatever the engine: audio output, the
 * deprecated `functions` (answered as `function_call`), web search (its citations), moderation
 * results. A 400 naming the field.
 */
function refuseUnrelayable(body: Record<string, unknown>): void {
  const set = (k: string): boolean => body[k] !== undefined && body[k] !== null;
  if (set('audio')) throw invalidInput("'audio' is not supported: this gateway answers in text only.", 'audio');
  const m = body.modalities;
  if (m !== undefined && m !== null) {
    if (!Array.isArray(m) || !m.every((x) => x === 'text' || x === 'audio'))
      throw invalidInput("Invalid 'modalities': expected an array of 'text' and 'audio'.", 'modalities');
    if (m.includes('audio'))
      throw invalidInput("'modalities' with 'audio' is not supported: this gateway answers in text only.", 'modalities');
  }
  if (set('functions')) throw invalidInput("'functions' is deprecated and not supported: use 'tools'.", 'functions');
  if (set('function_call')) throw invalidInput("'function_call' is deprecated and not supported: use 'tool_choice'.", 'function_call');
  if (set('web_search_options'))
    throw invalidInput("'web_search_options' is not supported: this gateway has no web search.", 'web_search_options');
  if (set('moderation')) throw invalidInput("'moderation' is not supported: this gateway runs no moderation.", 'moderation');
}

/** Fields accepted on every engine because they change no answer (hints for OpenAI's own caches and records), type-checked. */
function checkAccepted(body: Record<string, unknown>): void {
  for (const k of ['prompt_cache_key', 'safety_identifier'] as const) {
    const v = body[k];
    if (v !== undefined && v !== null && typeof v !== 'string') throw invalidInput(`Invalid type for '${k}': expected a string.`, k);
    if (typeof v === 'string') wellFormed(v, k);
  }
  if (body.store !== undefined && body.store !== null && typeof body.store !== 'boolean')
    throw invalidInput("Invalid type for 'store': expected a boolean.", 'store');
  optEnum(body, 'prompt_cache_retention', ['in_memory', '24h']);
  const pco = body.prompt_cache_options;
  if (pco !== undefined && pco !== null) {
    if (!isObj(pco)) throw invalidInput("Invalid type for 'prompt_cache_options': expected an object.", 'prompt_cache_options');
    optEnum(pco, 'mode', ['implicit', 'explicit'], 'prompt_cache_options.mode');
    optEnum(pco, 'ttl', ['30m'], 'prompt_cache_options.ttl');
  }
  const pred = body.prediction;
  if (pred !== undefined && pred !== null) {
    if (!isObj(pred) || pred.type !== 'content')
      throw invalidInput('Invalid \'prediction\': expected {"type": "content", "content": ...}.', 'prediction');
    flattenContent(pred.content, 'prediction.content');
  }
}
