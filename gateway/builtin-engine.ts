/**
 * The built-in engine: the tfjs policy of trainer/, served from the PolicyRegistry. It
 * records the prompt ids it actually used (after the policy's truncation, never an error),
 * every generated id (the final `<|end|>` included) and its log-prob, so the trainer never
 * re-tokenizes. Tools are accepted but not rendered: this small model answers in text.
 */
import { randomInt } from 'node:crypto';
import { ErrorCodes, TurnstreamError } from '../streams/errors.ts';
import type { ChatMessage as PolicyMessage } from '../trainer/index.ts';
import type { ChatRequest } from './chat-request.ts';
import type { Engine, EngineCallOptions, EngineResult, ModelCard } from './engine.ts';
import type { PolicyRegistry } from './policy-registry.ts';

export interface BuiltinEngineOptions {
  registry: PolicyRegistry;
  /** max_tokens when the request gives none. @default 128 */
  defaultMaxTokens?: number;
  /** Prompt budget in tokens. @default the policy's (three quarters of its context length) */
  maxPromptTokens?: number;
}

/** Request messages → the policy's roles and plain text (developer → system; tool calls as text). */
export function toPolicyMessages(messages: ChatRequest['messages']): PolicyMessage[] {
  return messages.map((m) => {
    const role = m.role === 'developer' ? 'system' : (m.role as PolicyMessage['role']);
    let content = m.content ?? '';
    if (m.toolCalls.length > 0) {
      const calls = m.toolCalls.map((t) => `${t.name}(${t.arguments})`).join('\n');
      content = content ? `${content}\n${calls}` : calls;
    }
    return { role, content };
  });
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
      let text = '';
      let finish: string = 'length';
      for await (const tok of policy.generate(promptIds, { ...sampling, signal: call.signal })) {
        ids.push(tok.id);
        logprobs.push(tok.logprob);
        if (tok.text) {
          text += tok.text;
          call.onDelta?.({ content: tok.text });
        }
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
        tokenized: true,
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
