/**
 * The llama.cpp engine: a GGUF model served through node-llama-cpp, with the weight versions
 * of `LlamaVersions` (LoRA adapters) hot-swapped under it.
 *
 * - Prompts are rendered with the model's own chat template (tools too) and fitted to the
 *   context by ChatFormat's policy, never refused; the Turn records the token ids actually used.
 * - Sampling: `temperature` and `top_p` as asked (the configured defaults otherwise), no top-k
 *   or min-p, seeded (the seed used is recorded). The Turn keeps each sampled token's log-prob
 *   under the distribution it was drawn from (llama.cpp's chain: the top-p nucleus of the
 *   model's distribution, then logits ÷ temperature, renormalised; the greedy token's own
 *   log-prob at temperature 0), marked exact: the trainer scores the same distribution
 *   (docs/design/algorithms.md §10), so what differs is the engines alone.
 * - With `logprobs: true` llama.cpp hands over the whole distribution at each step: the client
 *   gets each token's own log-prob (temperature 1) and the `top_logprobs` of that distribution,
 *   as OpenAI reports them, the gateway draws the token itself (same chain: top-p, then
 *   temperature), and the Turn keeps the log-prob it was drawn with, as above.
 * - `stop` strings end the answer (the text stops before them; their tokens stay in the Turn),
 *   the end-of-generation token ends it too and is recorded as the last response token.
 * - Tool calls are parsed in the template's syntax; streamed text never shows them. `tool_choice:
 *   none` renders no tools; `parallel_tool_calls: false` ends the answer after its first call.
 * - `response_format` json_object / json_schema: the answer is sampled under llama.cpp's grammar of
 *   the schema (grammar-schema.ts says which keywords it enforces; any other is a 400), so an
 *   answer that completes is JSON that validates. `presence_penalty` / `frequency_penalty` (over
 *   the answer's tokens, as OpenAI) and `logit_bias` are llama.cpp's sampler stages. A turn
 *   sampled under any of them has `exactLogprobs: false`: the trainer cannot reproduce them.
 * - A prompt of its own (`/v1/completions`) is tokenized as is (token ids used as given), never
 *   truncated (one that leaves no room for an answer is a 400); with `echo` and `logprobs` each
 *   prompt token's log-prob is computed too (the prompt is then evaluated whole).
 */
import { randomInt } from 'node:crypto';
import { availableParallelism } from 'node:os';
import {
  TokenBias,
  type Llama,
  type LlamaContextSequence,
  type LlamaGrammar,
  type LlamaModel as NodeLlamaModel,
  type ControlledEvaluateInputItem,
  type SequenceEvaluateOptions,
  type Token,
} from 'node-llama-cpp';
import { AdapterStore, ChatFormat, TokenBytes, drawToken, llamaRuntime, type OpenAITool, type RemoteWeights } from '../policy/index.ts';
import { mulberry32, ErrorCodes, TurnstreamError, invalidInput, type Logger } from '../core/index.ts';
import type { WeightVersion } from '../schemas/index.ts';
import { LLAMA_ENGINE_DEFAULTS, type LlamaBatching } from './defaults.ts';
import type { ChatRequest } from './chat-request.ts';
import type { Delta, Engine, EngineCallOptions, EngineResult, ModelCard, PromptTokenLogprob } from './engine.ts';
import { ANY_OBJECT, grammarSchema, withoutExponents, type GrammarSchema } from './grammar-schema.ts';
import { GrammarTrack } from './grammar-track.ts';
import { KvStates, tempStatesDir } from './kv-states.ts';
import { LlamaVersions } from './llama-versions.ts';
import { AnswerText } from './answer-text.ts';
import { refuseForLocalEngine } from './local-request.ts';
import { Utf8Bans, Utf8Track } from './utf8-guard.ts';
import type { TokenLogprob } from './logprobs.ts';
import { Lru } from './lru.ts';

export interface LlamaEngineOptions {
  /** The base checkpoint: a display name, the model id of its weight versions, the GGUF file and its sha256. */
  model: { name: string; modelId: string; path: string; sha256: string };
  /** Weight store root (`TURNSTREAM_WEIGHTS_DIR`). */
  weightsDir: string;
  /** Where a pinned version (`name@N`) the store lacks is fetched from (policy/weight-transport.ts). @default none */
  remoteWeights?: RemoteWeights;
  /** Tokens per sequence. `LLAMA_CONTEXT_SIZE` @default the model's training context, at most LLAMA_ENGINE_DEFAULTS.maxContextSize (8192) */
  contextSize?: number;
  /** Generations at once (sequences of each version). `LLAMA_PARALLEL` @default LLAMA_ENGINE_DEFAULTS.parallel (2) */
  parallel?: number;
  /**
   * A version's `parallel` sequences in contexts of their own (`separate`) or in one context
   * decoded as one batch (`shared`; see LlamaBatching). `LLAMA_BATCHING` @default LLAMA_ENGINE_DEFAULTS.batching ('separate')
   */
  batching?: LlamaBatching;
  /**
   * CPU threads of a version, all its contexts together (`separate`: each its share, at least 1). llama.cpp's threads spin while they wait for each other, so more
   * threads than free cores makes every token slower; the default leaves half the cores to the
   * rest of the loop (processors, trainer). `LLAMA_THREADS` @default half the cores, at least 1
   */
  threads?: number;
  /** Tokens llama.cpp evaluates in one batch (prompt evaluation). @default node-llama-cpp's: 512 */
  batchSize?: number;
  /**
   * Flash attention. On the CPU it is off by default: without it llama.cpp's results for a token do
   * not depend on how the prompt was split into batches, so an answer's log-probs are the same to
   * 1e-6 whether its prompt was evaluated now or came from the prefix cache; with it they moved by
   * up to 0.04 nats on SmolLM2-135M (a token evaluated alone takes another path), for 19 % less
   * CPU at 4k prompt tokens. @default false on the CPU, 'auto' (llama.cpp's choice) on a GPU
   */
  flashAttention?: boolean | 'auto';
  /**
   * Evaluated prompts kept on disk beyond what the sequences hold (gateway/kv-states.ts), so that a
   * long prefix seen before (an agent's system prompt, a session's history) is read back instead
   * of evaluated again; `false` keeps only what the sequences hold.
   * @default { dir: a folder of its own under the system's temp folder, maxBytes: 1 GiB, minTokens: 256 }
   */
  kvCache?: false | { dir?: string; maxBytes?: number; minTokens?: number };
  /** max_tokens when a request gives none. `LLAMA_MAX_TOKENS` @default LLAMA_ENGINE_DEFAULTS.defaultMaxTokens (512) */
  defaultMaxTokens?: number;
  /** temperature when a request gives none. `LLAMA_TEMPERATURE` @default LLAMA_ENGINE_DEFAULTS.temperature (0.3) */
  temperature?: number;
  /** top_p when a request gives none. `LLAMA_TOP_P` @default LLAMA_ENGINE_DEFAULTS.topP (0.9) */
  topP?: number;
  /** System prompt for conversations without one. @default undefined (the template's own) */
  systemPrompt?: string;
  /** Pinned versions (`name@N`) kept loaded besides the current one. @default LLAMA_ENGINE_DEFAULTS.maxPinned (2) */
  maxPinned?: number;
  /** `false` forces the CPU build. `LLAMA_GPU` @default LLAMA_ENGINE_DEFAULTS.gpu ('auto') */
  gpu?: 'auto' | false;
  logger?: Logger;
  onSwap?: (version: number) => void;
}

interface Loaded {
  llama: Llama;
  model: NodeLlamaModel;
  states: KvStates | null;
  format: ChatFormat;
  bytes: TokenBytes;
  versions: LlamaVersions;
  contextSize: number;
  vocabSize: number;
  /** Grammars of recent JSON schemas (compiling one takes a while), by the schema's JSON. */
  grammars: Lru<string, Promise<LlamaGrammar>>;
  /** The tokens that would break UTF-8 from each state (for grammar-constrained answers). */
  utf8: Utf8Bans;
}

/** Grammars kept compiled. */
const GRAMMAR_CACHE = 32;

export class LlamaEngine implements Engine {
  readonly kind = 'llama' as const;
  private loaded: Loaded | null = null;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(private readonly o: LlamaEngineOptions) {}

  /** Loads the model and serves the store's latest version. */
  async start(): Promise<void> {
    const llama = await llamaRuntime({ gpu: this.o.gpu, logger: this.o.logger });
    const model = await llama.loadModel({ modelPath: this.o.model.path });
    const contextSize = this.o.contextSize ?? Math.min(model.trainContextSize, LLAMA_ENGINE_DEFAULTS.maxContextSize);
    const tok = model.fileInfo.metadata.tokenizer?.ggml;
    const kv = this.o.kvCache;
    const states =
      kv === false ? null : await KvStates.open({ dir: kv?.dir ?? (await tempStatesDir()), maxBytes: kv?.maxBytes, logger: this.o.logger });
    const versions = new LlamaVersions({
      model,
      modelId: this.o.model.modelId,
      base: { name: this.o.model.name, sha256: this.o.model.sha256 },
      store: new AdapterStore(this.o.weightsDir, this.o.remoteWeights),
      contextSize,
      parallel: this.o.parallel ?? LLAMA_ENGINE_DEFAULTS.parallel,
      batching: this.o.batching ?? LLAMA_ENGINE_DEFAULTS.batching,
      threads: this.o.threads ?? Math.max(1, Math.floor(availableParallelism() / 2)),
      batchSize: this.o.batchSize,
      flashAttention: this.o.flashAttention ?? (llama.gpu === false ? false : 'auto'),
      states,
      minStateTokens: kv === false ? undefined : kv?.minTokens,
      maxPinned: this.o.maxPinned ?? LLAMA_ENGINE_DEFAULTS.maxPinned,
      logger: this.o.logger,
      onSwap: this.o.onSwap,
    });
    const vocab = (tok?.tokens ?? []) as string[];
    const bytes = new TokenBytes(vocab, tok?.token_type as number[] | undefined, String(tok?.model ?? ''));
    this.loaded = {
      llama,
      model,
      states,
      vocabSize: vocab.length,
      grammars: new Lru(GRAMMAR_CACHE),
      utf8: new Utf8Bans((id) => bytes.bytes(id), vocab.length),
      format: new ChatFormat(model, { defaultSystemPrompt: this.o.systemPrompt }),
      bytes,
      versions,
      contextSize,
    };
    const v = await versions.loadInitial();
    this.o.logger?.info({ model: this.o.model.name, modelId: this.o.model.modelId, version: v, contextSize }, 'llama model loaded');
  }

  ready(): boolean {
    return this.loaded?.versions.version !== null && this.loaded !== null;
  }

  /** The version being served. */
  get version(): number | null {
    return this.loaded?.versions.version ?? null;
  }

  get versions(): LlamaVersions | null {
    return this.loaded?.versions ?? null;
  }

  /** Handles a WeightVersion from the weights topic. */
  offer(wv: WeightVersion): Promise<void> {
    return this.loaded ? this.loaded.versions.offer(wv) : Promise.resolve();
  }

  async models(): Promise<ModelCard[]> {
    const card = (id: string): ModelCard => ({ id, object: 'model', created: this.created, owned_by: 'turnstream' });
    const versions = (await this.loaded?.versions.available()) ?? [];
    return [card(this.o.model.name), ...versions.map((v) => card(`${this.o.model.name}@${v}`))];
  }

  /**
   * The version a request's `model` names: null for the current one (the model's name, its id,
   * or nothing), N for `name@N`. Anything else is NOT_FOUND (404 `model_not_found`).
   */
  versionFor(model: string): number | null {
    const names = new Set([this.o.model.name, this.o.model.modelId]);
    if (!model || names.has(model)) return null;
    const at = model.lastIndexOf('@');
    if (at > 0 && names.has(model.slice(0, at)) && /^\d+$/.test(model.slice(at + 1))) return Number(model.slice(at + 1));
    throw new TurnstreamError(
      ErrorCodes.NOT_FOUND,
      `The model \`${model}\` does not exist; this gateway serves ${this.o.model.name} (and ${this.o.model.name}@N for version N)`,
      {
        param: 'model',
      },
    );
  }

  checkModel(model: string): void {
    this.versionFor(model);
  }

  checkRequest(req: ChatRequest): void {
    refuseForLocalEngine(req, 'llama');
    this.schemaOf(req);
    const l = this.loaded;
    if (!l) return;
    for (const [id] of req.logitBias ?? []) {
      if (id >= l.vocabSize)
        throw invalidInput(`Invalid 'logit_bias': token ${id} is outside the vocabulary [0, ${l.vocabSize}).`, 'logit_bias');
      if (l.model.isEogToken(id as Token)) {
        throw invalidInput(
          `'logit_bias' on token ${id} is not supported: it ends the generation, and llama.cpp's bias stage leaves such tokens alone.`,
          'logit_bias',
        );
      }
    }
    const prompt = req.prompt;
    if (prompt && 'tokens' in prompt) {
      const bad = prompt.tokens.find((t) => t >= l.vocabSize);
      if (bad !== undefined)
        throw invalidInput(`Invalid 'prompt': token id ${bad} is outside the vocabulary [0, ${l.vocabSize}).`, 'prompt');
    }
  }

  /** The grammar schema a request's `response_format` asks for (null: free text); a 400 for a keyword the grammar cannot enforce. */
  private schemaOf(req: ChatRequest): GrammarSchema | null {
    const f = req.responseFormat;
    if (!f || f.type === 'text') return null;
    if (f.type === 'json_object') return ANY_OBJECT;
    return grammarSchema(f.schema, 'response_format.json_schema.schema');
  }

  /** The compiled grammar of a schema (numbers without an exponent), compiled once for the recent ones. */
  private grammarOf(l: Loaded, schema: GrammarSchema): Promise<LlamaGrammar> {
    const key = JSON.stringify(schema);
    let grammar = l.grammars.get(key);
    if (!grammar) {
      grammar = (async () => {
        const json = await l.llama.createGrammarForJsonSchema(schema as never);
        const gbnf = withoutExponents(json.grammar);
        return l.llama.createGrammar({
          grammar: gbnf,
          stopGenerationTriggers: json.stopGenerationTriggers,
          trimWhitespaceSuffix: json.trimWhitespaceSuffix,
        });
      })();
      l.grammars.set(key, grammar);
      grammar.catch(() => l.grammars.delete(key));
    }
    return grammar;
  }

  /** The prompt's tokens: the chat rendered with the template and fitted, or the request's own prompt, whole. */
  private promptOf(
    l: Loaded,
    req: ChatRequest,
    tools: OpenAITool[] | null,
    wanted: number,
  ): { tokens: number[]; truncatedTokens: number; text?: string } {
    const raw = req.prompt;
    if (!raw) {
      // The answer keeps at least a quarter of the context; the prompt gets the rest.
      const budget = Math.max(Math.floor(l.contextSize * 0.75), l.contextSize - wanted);
      return l.format.render(req.messages, tools, Math.min(budget, l.contextSize - 1));
    }
    let tokens: number[];
    if ('tokens' in raw) tokens = raw.tokens;
    else {
      // Special tokens written in the text are read as such, as llama.cpp's server and vLLM do.
      tokens = l.model.tokenize(raw.text, true) as number[];
      const bos = l.model.tokens.bos;
      if (l.model.fileInfo.metadata.tokenizer?.ggml?.add_bos_token === true && bos !== null && tokens[0] !== bos) tokens.unshift(bos);
    }
    if (tokens.length === 0) throw invalidInput("Invalid 'prompt': it has no tokens.", 'prompt');
    if (tokens.length + Math.min(wanted, 1) > l.contextSize) {
      throw invalidInput(
        `This model's context is ${l.contextSize} tokens; the prompt has ${tokens.length}, leaving no room for an answer.`,
        'prompt',
      );
    }
    return { tokens, truncatedTokens: 0, text: 'tokens' in raw ? l.model.detokenize(tokens as Token[], true) : raw.text };
  }

  async complete(req: ChatRequest, call: EngineCallOptions): Promise<EngineResult> {
    const l = this.loaded;
    if (!l) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'the model is not loaded yet');
    const version = this.versionFor(req.model);
    const tools = req.toolChoice === 'none' ? null : ((req.tools as OpenAITool[] | null) ?? null);
    const wanted = req.maxTokens ?? this.o.defaultMaxTokens ?? LLAMA_ENGINE_DEFAULTS.defaultMaxTokens;
    const { tokens: prompt, truncatedTokens, text: promptText } = this.promptOf(l, req, tools, wanted);
    const maxTokens = Math.max(req.prompt ? 0 : 1, Math.min(wanted, l.contextSize - prompt.length));
    const temperature = req.temperature ?? this.o.temperature ?? LLAMA_ENGINE_DEFAULTS.temperature;
    const topP = req.topP ?? this.o.topP ?? LLAMA_ENGINE_DEFAULTS.topP;
    const seed = req.seed ?? randomInt(0, 2 ** 31);
    const schema = this.schemaOf(req);
    const grammar = schema ? await this.grammarOf(l, schema) : null;
    const presence = req.presencePenalty ?? 0;
    const frequency = req.frequencyPenalty ?? 0;
    const biasOf = (banned: readonly number[] = []): TokenBias => {
      const b = TokenBias.for(l.model);
      for (const [id, logit] of req.logitBias ?? []) b.set(id as Token, { logit });
      for (const id of banned) b.set(id as Token, 'never');
      return b;
    };
    const bias = req.logitBias?.length ? biasOf() : null;
    // `echo` with `logprobs` scores the prompt: every token of it is evaluated, none reused.
    const scoring = req.echo === true && req.logprobs && req.prompt !== undefined && req.prompt !== null;
    const lease = await l.versions.acquire(version, prompt, call.signal, scoring);
    try {
      const promptLogprobs = scoring ? await scorePrompt(l, lease.seq, prompt, req.topLogprobs ?? 0, call.signal) : null;
      if (promptText !== undefined) call.onPrompt?.({ text: promptText, logprobs: promptLogprobs });
      const out = await this.generate(l, lease.seq, prompt, scoring ? prompt.length - 1 : lease.reused, {
        temperature,
        topP,
        seed,
        maxTokens,
        stop: req.stop,
        tools,
        req,
        call,
        grammar: grammar ? new GrammarTrack(l.model, grammar) : null,
        utf8: grammar ? new Utf8Track(l.utf8, biasOf) : null,
        penalties: presence || frequency ? { presence, frequency } : null,
        bias,
        singleToolCall: tools !== null && req.parallelToolCalls === false,
      });
      return {
        ...out,
        policyModelId: this.o.model.modelId,
        policyVersion: lease.slot.version,
        promptTokenIds: prompt,
        tokenized: true,
        promptTruncatedTokens: truncatedTokens,
        promptHeadTokens: promptHead(l.format, req.messages, tools, prompt),
        promptTokens: prompt.length,
        cachedPromptTokens: lease.reused,
        completionTokens: out.responseTokenIds.length,
        sampling: {
          temperature,
          topP,
          maxTokens,
          seed,
          stop: req.stop,
          presencePenalty: presence || null,
          frequencyPenalty: frequency || null,
          responseFormat: schema ? JSON.stringify(req.responseFormat) : null,
        },
        ...(promptText !== undefined ? { promptText } : {}),
      };
    } finally {
      lease.release();
    }
  }

  /** Evaluates the rest of the prompt and generates the answer, streaming its deltas. */
  private async generate(l: Loaded, seq: LlamaContextSequence, prompt: number[], keep: number, g: Generation): Promise<Generated> {
    const { model, format } = l;
    const full = g.req.logprobs;
    const random = mulberry32(g.seed);
    const ids: number[] = [];
    // The sequence holds prompt[0, keep) already evaluated (LlamaVersions.acquire readied it).
    const it = evaluation(seq, prompt.slice(keep) as Token[], g, ids);
    const logprobs: number[] = [];
    const entries: TokenLogprob[] | null = full ? [] : null;
    // A grammar's answer ends at its end marker, trailing whitespace trimmed (as node-llama-cpp's chat does).
    const text = new AnswerText(g.grammar ? [...g.stop, GRAMMAR_END] : g.stop, g.tools ? format.toolCallPrefix : '', g.grammar !== null);
    let finish = 'length';
    let next: Token | undefined;
    try {
      while (ids.length < g.maxTokens) {
        if (g.call.signal.aborted) throw abortError(g.call.signal);
        const r = await it.next(next);
        if (r.done) {
          finish = 'stop';
          break;
        }
        const t = tokenOf(l, r.value, g, random);
        next = t.drawn ? t.token : undefined;
        if (t.drawn) g.grammar?.accept(t.token);
        g.utf8?.advance(l.bytes.bytes(t.token));
        ids.push(t.token);
        logprobs.push(t.lp);
        const eog = model.isEogToken(t.token);
        // The end-of-generation token is trained on (the Turn keeps it) but is no part of the
        // content; a completion's log-probs list it (one entry per generated token, as lm-eval counts).
        const entry = eog && !g.req.prompt ? null : t.entry;
        if (entry) entries!.push(entry);
        const step = eog ? { delta: '', stopped: false } : text.push(model.detokenize(ids as Token[], false));
        const delta: Delta = {};
        if (step.delta) delta.content = step.delta;
        if (entry) delta.logprobs = { content: [entry], refusal: null };
        if (delta.content !== undefined || delta.logprobs) g.call.onDelta?.(delta);
        if (eog || step.stopped || (g.singleToolCall && text.hasToolCall(format))) {
          finish = 'stop';
          break;
        }
      }
    } finally {
      await it.return();
    }
    const parsed = finishAnswer(text, format, g);
    return {
      content: parsed.content,
      toolCalls: parsed.toolCalls,
      finishReason: parsed.toolCalls.length > 0 ? 'tool_calls' : finish,
      responseTokenIds: ids,
      responseLogprobs: logprobs,
      logprobs: entries ? { content: entries, refusal: null } : null,
      // A grammar, penalties or a bias shaped the distribution: the trainer cannot reproduce it.
      exactLogprobs: !shaped(g),
    };
  }

  async close(): Promise<void> {
    const l = this.loaded;
    this.loaded = null;
    await l?.versions.close();
    await l?.model.dispose();
    await l?.states?.close();
  }
}

/** One generation's sampling and what it streams to. */
interface Generation {
  temperature: number;
  topP: number;
  seed: number;
  maxTokens: number;
  stop: string[];
  tools: OpenAITool[] | null;
  req: ChatRequest;
  call: EngineCallOptions;
  /** The answer's place in its `response_format` grammar; null: free text. */
  grammar: GrammarTrack | null;
  /** `presence_penalty` / `frequency_penalty` over the answer's tokens; null: none. */
  penalties: { presence: number; frequency: number } | null;
  /** `logit_bias`; null: none. */
  bias: TokenBias | null;
  /** With a grammar: the answer's UTF-8 state, whose bias (`logit_bias` and the bans) replaces `bias`. */
  utf8: Utf8Track<TokenBias> | null;
  /** End the answer after its first tool call (`parallel_tool_calls: false`). */
  singleToolCall: boolean;
}

/** What node-llama-cpp's JSON-schema grammars end with (their stop trigger): four newlines. */
const GRAMMAR_END = '\n'.repeat(4);

/** Whether anything but temperature and top-p shaped the distribution the answer was drawn from. */
const shaped = (g: Generation): boolean => g.grammar !== null || g.penalties !== null || g.bias !== null;

type Generated = Pick<
  EngineResult,
  'content' | 'toolCalls' | 'finishReason' | 'responseTokenIds' | 'responseLogprobs' | 'logprobs' | 'exactLogprobs'
>;

/**
 * The evaluation of the prompt's rest and the tokens after it. With `logprobs` llama.cpp hands
 * over the whole distribution at each step (temperature 1, untruncated) and the token is drawn
 * here (tokenOf); otherwise its own sampler draws it, with the confidence of each token.
 */
function evaluation(seq: LlamaContextSequence, tokens: Token[], g: Generation, answer: readonly number[]) {
  const sampler = { topK: 0, minP: 0, seed: g.seed >>> 0, yieldEogToken: true, ...shaping(g, answer) };
  return g.req.logprobs
    ? seq.evaluateWithMetadata(tokens, { probabilities: true }, { ...sampler, temperature: 1, topP: 1 })
    : seq.evaluateWithMetadata(tokens, { confidence: true }, { ...sampler, temperature: g.temperature, topP: g.topP });
}

/**
 * The sampler stages besides temperature and top-p: the grammar (llama.cpp advances it when it
 * draws; a copy per step when the token is drawn here), the penalties over the answer so far (all
 * of it: as OpenAI, not a window), the bias.
 */
function shaping(
  g: Generation,
  answer: readonly number[],
): Pick<SequenceEvaluateOptions, 'grammarEvaluationState' | 'repeatPenalty' | 'tokenBias'> {
  const out: Pick<SequenceEvaluateOptions, 'grammarEvaluationState' | 'repeatPenalty' | 'tokenBias'> = {};
  const grammar = g.grammar;
  if (grammar) out.grammarEvaluationState = g.req.logprobs ? () => grammar.scratch() : grammar.live;
  if (g.penalties) {
    out.repeatPenalty = {
      punishTokens: () => answer as Token[],
      maxPunishTokens: Math.max(64, g.maxTokens),
      penalty: 1,
      presencePenalty: g.penalties.presence,
      frequencyPenalty: g.penalties.frequency,
    };
  }
  const utf8 = g.utf8;
  if (utf8) out.tokenBias = () => utf8.bias();
  else if (g.bias) out.tokenBias = g.bias;
  return out;
}

/** What the evaluation yields for one step. */
interface Evaluated {
  token: Token;
  probabilities?: ReadonlyMap<number, number>;
  confidence?: number;
}

/**
 * The step's token and its log-prob: drawn here from the whole distribution (then also its
 * entry for the client, with the `top_logprobs` of that distribution), or llama.cpp's own.
 */
function tokenOf(
  l: Loaded,
  value: Evaluated,
  g: Generation,
  random: () => number,
): { token: Token; lp: number; entry: TokenLogprob | null; drawn: boolean } {
  const probs = value.probabilities;
  if (!probs) return { token: value.token, lp: Math.log(Math.max(value.confidence ?? 0, 1e-30)), entry: null, drawn: false };
  const topN = g.req.topLogprobs ?? 0;
  const d = drawToken(probs, { temperature: g.temperature, topP: g.topP }, random);
  // The Turn keeps the probability the token was drawn with; the client gets the model's own.
  const lp = Math.log(g.temperature > 0 ? d.drawnProbability : d.probability);
  const own = Math.log(d.probability);
  const top: Array<{ id: number; lp: number }> = [];
  for (const [id, p] of probs) {
    // Sorted: past the first impossible token (a grammar's mask) there is nothing to list.
    if (top.length >= topN || p <= 0) break;
    top.push({ id, lp: Math.log(p) });
  }
  const render = (id: number, logprob: number) => ({ token: l.format.tokenText(id), logprob, bytes: l.bytes.bytes(id) });
  const entry = { ...render(d.token, own), top_logprobs: top.map((t) => render(t.id, t.lp)) };
  return { token: d.token as Token, lp, entry, drawn: true };
}

/** Prompt tokens evaluated per call when scoring a prompt (each position's whole distribution is held until its call returns). */
const SCORE_CHUNK = 32;

/**
 * Each prompt token's log-prob given the tokens before it (temperature 1, untruncated) and the
 * `topN` likeliest tokens at its place; the first token has none. Evaluates all but the last
 * prompt token into `seq` (the generation evaluates that one).
 */
async function scorePrompt(
  l: Loaded,
  seq: LlamaContextSequence,
  prompt: number[],
  topN: number,
  signal: AbortSignal,
): Promise<PromptTokenLogprob[]> {
  const exact = { temperature: 1, topK: 0, topP: 1, minP: 0 };
  const render = (id: number) => ({ token: l.format.tokenText(id), bytes: l.bytes.bytes(id) });
  const out: PromptTokenLogprob[] = [{ ...render(prompt[0]), logprob: null, top_logprobs: [] }];
  const upto = prompt.length - 1;
  for (let at = 0; at < upto; at += SCORE_CHUNK) {
    if (signal.aborted) throw abortError(signal);
    const chunk = prompt.slice(at, Math.min(upto, at + SCORE_CHUNK));
    const results = await seq.controlledEvaluate(
      chunk.map((t): ControlledEvaluateInputItem => [t as Token, { generateNext: { probabilities: true, options: exact } }]),
    );
    chunk.forEach((_, i) => {
      const next = prompt[at + i + 1];
      const probs = results[i]?.next.probabilities;
      const top: Array<{ token: string; logprob: number; bytes: number[] | null }> = [];
      for (const [id, p] of probs ?? []) {
        if (top.length >= topN) break;
        top.push({ ...render(id), logprob: Math.log(p) });
      }
      out.push({ ...render(next), logprob: Math.log(probs?.get(next as Token) ?? 0), top_logprobs: top });
    });
  }
  return out;
}

/**
 * The answer once generation ends: the text still held back is streamed, and tool calls (in
 * the template's syntax) are parsed out of it and streamed as one delta.
 */
function finishAnswer(text: AnswerText, format: ChatFormat, g: Generation): Pick<EngineResult, 'content' | 'toolCalls'> {
  const end = text.finish();
  if (end.delta) g.call.onDelta?.({ content: end.delta });
  const parsed = g.tools ? format.parse(end.text) : { content: end.text, toolCalls: [] };
  if (parsed.toolCalls.length > 0) {
    g.call.onDelta?.({
      toolCalls: parsed.toolCalls.map((t, index) => ({
        index,
        id: t.id,
        type: 'function',
        function: { name: t.name, arguments: t.arguments },
      })),
    });
  }
  return parsed;
}

/**
 * How many of `prompt`'s tokens hold the system message and the first user message (the task):
 * the head rendered alone, as far as it agrees with the prompt (the fitting policy may have cut
 * it). A prompt with nothing after its first user message is all head.
 */
export function promptHead(format: ChatFormat, messages: ChatRequest['messages'], tools: OpenAITool[] | null, prompt: number[]): number {
  const firstUser = messages.findIndex((m) => m.role === 'user');
  if (firstUser < 0) return 0;
  if (firstUser === messages.length - 1) return prompt.length;
  const head = format.tokenize(messages.slice(0, firstUser + 1), tools);
  let n = 0;
  while (n < head.length && n < prompt.length && head[n] === prompt[n]) n++;
  return n;
}

function abortError(signal: AbortSignal): TurnstreamError {
  return signal.reason instanceof TurnstreamError ? signal.reason : new TurnstreamError(ErrorCodes.ABORTED, 'the generation was aborted');
}
