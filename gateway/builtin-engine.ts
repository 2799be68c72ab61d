/**
 * The built-in engine: the tfjs policy of trainer/, served from the PolicyRegistry. It
 * records the prompt ids it actually used (after the policy's truncation, never an error),
 * every generated id (the final `<|end|>` included) and its log-prob, so the trainer never
 * re-tokenizes. Tools are accepted but not rendered: this small model answers in text.
 *
 * The Turn's `responseLogprobs` are each token's log-prob under the distribution it was drawn
 * from (top-p, then temperature, as llama.cpp; the trainer scores the same). With
 * `logprobs: true` the client gets each token's log-prob under the policy's own distribution
 * (temperature 1, before temperature and top-p reshape it for sampling; vLLM's default
 * `raw_logprobs` reports the same kind): a confidence of the model itself, meaningful also at
 * temperature 0, where the distribution sampled from would give every token log-prob 0. `top_logprobs` lists the N most
 * likely tokens of that same distribution at each step. Every generated token is reported, so
 * `logprobs.content` has `usage.completion_tokens` entries, including the tokens of a stop string
 * and the final `<|end|>`, which are not in the text. Streaming then sends one chunk per token.
 *
 * What it refuses (a 400 naming the field, never ignored): `response_format` json_object and
 * json_schema (this model has no grammar-constrained sampling), `presence_penalty`,
 * `frequency_penalty` and `logit_bias` other than none, `echo` with `logprobs`, and what no local
 * engine serves (local-request.ts). Tools are accepted and not shown to this small model, which
 * answers in text, as `tool_choice: auto` allows. A prompt of its own (`/v1/completions`) is its
 * bytes (or token ids), never truncated: one that leaves no room for an answer is a 400.
 */
import { randomInt } from 'node:crypto';
import { ErrorCodes, TurnstreamError, invalidInput } from '../core/index.ts';
import { toPolicyMessages, type PolicyHandle } from '../policy/index.ts';
import type { ChatRequest } from './chat-request.ts';
import { refuseForLocalEngine } from './local-request.ts';
import type { Engine, EngineCallOptions, EngineResult, ModelCard } from './engine.ts';
import { tokenLogprob, type TokenLogprob } from './logprobs.ts';
import type { PolicyRegistry } from './policy-registry.ts';

export interface BuiltinEngineOptions {
  registry: PolicyRegistry;
  /** max_tokens when the request gives none. @default 128 */
  defaultMaxTokens?: number;
  /** Prompt budget in tokens. @default the policy's (three quarters of its context length) */
  maxPromptTokens?: number;
}

export class BuiltinEngine implements Engine {
  readonly kind = 'builtin' as const;
  private readonly created = Math.floor(Date.now() / 1000);

  constructor(private readonly opts: BuiltinEngineOptions) {}

  ready(): boolean {
    return this.opts.registry.policy !== null;
  }

  async models(): Promise<ModelCard[]> {
    return [{ id: this.opts.registry.modelId, object: 'model', created: this.created, owned_by: 'turnstream' }];
  }

  /** The model id, or `id@N` for the version being served (older versions are not kept loaded). */
  checkModel(model: string): void {
    const id = this.opts.registry.modelId;
    if (!model || model === id || model === `${id}@${this.opts.registry.version}`) return;
    throw new TurnstreamError(ErrorCodes.NOT_FOUND, `The model \`${model}\` does not exist; this gateway serves ${id}`, { param: 'model' });
  }

  checkRequest(req: ChatRequest): void {
    refuseForLocalEngine(req, 'built-in');
    const format = req.responseFormat?.type ?? 'text';
    if (format !== 'text') {
      throw invalidInput(
        `'response_format' ${format} is not supported by the built-in engine (no constrained sampling); the llama engine honours it.`,
        'response_format',
      );
    }
    for (const [key, v] of [
      ['presence_penalty', req.presencePenalty],
      ['frequency_penalty', req.frequencyPenalty],
    ] as const) {
      if (v) throw invalidInput(`'${key}' is not supported by the built-in engine; the llama engine honours it.`, key);
    }
    if (req.logitBias?.length)
      throw invalidInput("'logit_bias' is not supported by the built-in engine; the llama engine honours it.", 'logit_bias');
    if (req.echo && req.logprobs)
      throw invalidInput("'echo' with 'logprobs' (the prompt's log-probs) is not supported by the built-in engine.", 'echo');
    const vocab = this.opts.registry.policy?.tokenizer.vocabSize;
    const prompt = req.prompt;
    if (vocab !== undefined && prompt && 'tokens' in prompt) {
      const bad = prompt.tokens.find((t) => t >= vocab);
      if (bad !== undefined) throw invalidInput(`Invalid 'prompt': token id ${bad} is outside the vocabulary [0, ${vocab}).`, 'prompt');
    }
  }

  /** The prompt ids: the chat rendered by the policy's template (truncated to fit), or the request's own prompt (whole). */
  private promptOf(req: ChatRequest, policy: PolicyHandle): { ids: number[]; truncatedTokens: number; text?: string } {
    const raw = req.prompt;
    if (!raw) return policy.renderPrompt(toPolicyMessages(req.messages), this.opts.maxPromptTokens);
    const ids = 'tokens' in raw ? raw.tokens : policy.tokenizer.encode(raw.text);
    const room = policy.config.contextLength - ids.length;
    if (ids.length === 0) throw invalidInput("Invalid 'prompt': it has no tokens.", 'prompt');
    if (room < (req.maxTokens === 0 ? 0 : 1)) {
      throw invalidInput(
        `This model's maximum context length is ${policy.config.contextLength} tokens; the prompt has ${ids.length}, leaving no room for an answer.`,
        'prompt',
      );
    }
    return { ids, truncatedTokens: 0, text: 'tokens' in raw ? policy.tokenizer.decode(ids, { skipSpecial: false }) : raw.text };
  }

  async complete(req: ChatRequest, call: EngineCallOptions): Promise<EngineResult> {
    const lease = this.opts.registry.lease();
    if (!lease) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'the policy is not loaded yet');
    try {
      const policy = lease.value;
      const { ids: promptIds, truncatedTokens, text: promptText } = this.promptOf(req, policy);
      if (promptText !== undefined) call.onPrompt?.({ text: promptText, logprobs: null });
      const sampling = {
        temperature: req.temperature ?? 1,
        topP: req.topP ?? 1,
        maxTokens: Math.min(req.maxTokens ?? this.opts.defaultMaxTokens ?? 128, policy.config.contextLength - promptIds.length),
        // The seed actually used is recorded, so a turn can be reproduced.
        seed: req.seed ?? randomInt(0, 2 ** 31),
        stop: req.stop,
      };
      const ids: number[] = [];
      const logprobs: number[] = [];
      // Built only when asked: no per-token objects and no top-N search otherwise.
      const content: TokenLogprob[] | null = req.logprobs ? [] : null;
      const topLogprobs = req.logprobs ? (req.topLogprobs ?? 0) : 0;
      let text = '';
      let finish: string = 'length';
      for await (const tok of policy.generate(promptIds, { ...sampling, topLogprobs, signal: call.signal })) {
        ids.push(tok.id);
        logprobs.push(tok.drawnLogprob);
        text += tok.text;
        if (content) {
          const entry = tokenLogprob(policy.tokenizer, tok.id, tok.logprob, tok.top);
          content.push(entry);
          call.onDelta?.({ content: tok.text, logprobs: { content: [entry], refusal: null } });
        } else if (tok.text) call.onDelta?.({ content: tok.text });
        if (tok.finishReason) finish = tok.finishReason;
      }
      return {
        content: text,
        toolCalls: [],
        finishReason: finish,
        policyModelId: policy.modelId,
        policyVersion: policy.version,
        promptTokenIds: promptIds,
        responseTokenIds: ids,
        responseLogprobs: logprobs,
        logprobs: content ? { content, refusal: null } : null,
        tokenized: true,
        exactLogprobs: true,
        promptTruncatedTokens: truncatedTokens,
        promptTokens: promptIds.length,
        completionTokens: ids.length,
        sampling,
        ...(promptText !== undefined ? { promptText } : {}),
      };
    } finally {
      lease.release();
    }
  }

  async close(): Promise<void> {
    await this.opts.registry.close();
  }
}
