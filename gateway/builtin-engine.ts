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
 */
import { randomInt } from 'node:crypto';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { toPolicyMessages } from '../policy/index.ts';
import type { ChatRequest } from './chat-request.ts';
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

  async complete(req: ChatRequest, call: EngineCallOptions): Promise<EngineResult> {
    const lease = this.opts.registry.lease();
    if (!lease) throw new TurnstreamError(ErrorCodes.UNAVAILABLE, 'the policy is not loaded yet');
    try {
      const policy = lease.policy;
      const { ids: promptIds, truncatedTokens } = policy.renderPrompt(toPolicyMessages(req.messages), this.opts.maxPromptTokens);
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
      };
    } finally {
      lease.release();
    }
  }

  async close(): Promise<void> {
    await this.opts.registry.close();
  }
}
