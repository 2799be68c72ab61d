/**
 * Where one answer stands in its grammar (a `response_format`'s JSON Schema), for llama.cpp's
 * sampler to constrain each step with.
 *
 * When llama.cpp draws the token itself, it advances the state with that token: `live`. When the
 * gateway draws it (a request with `logprobs`, from the whole distribution llama.cpp hands over),
 * the sampler gets a copy to constrain that step's distribution with (`scratch`; llama.cpp
 * advances the copy with a token of its own, which is thrown away), and the state advances with
 * the token actually drawn (`accept`). node-llama-cpp 3.21.1 exposes no public call for that
 * last step; `accept` uses its binding's `acceptGrammarEvaluationStateToken` (what its own
 * speculative decoding calls) and fails loudly if a later version drops it.
 */
import { LlamaGrammarEvaluationState, type LlamaGrammar, type LlamaModel, type Token } from 'node-llama-cpp';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';

/** node-llama-cpp's internals `accept` reaches for. */
interface Internals {
  _state: unknown;
  _llama: { _bindings: { AddonSampler: { acceptGrammarEvaluationStateToken?: (state: unknown, token: number) => void } } };
}

export class GrammarTrack {
  private state: LlamaGrammarEvaluationState;

  constructor(
    private readonly model: LlamaModel,
    grammar: LlamaGrammar,
  ) {
    this.state = new LlamaGrammarEvaluationState({ model, grammar });
  }

  /** The state itself, for a sampler that draws the token (and advances it). */
  get live(): LlamaGrammarEvaluationState {
    return this.state;
  }

  /** A copy for one step whose token is drawn elsewhere. */
  scratch(): LlamaGrammarEvaluationState {
    return this.state.clone();
  }

  /** Advances the state with a token drawn outside llama.cpp's sampler (end-of-generation tokens leave it as it is, as llama.cpp does). */
  accept(token: number): void {
    if (this.model.isEogToken(token as Token)) return;
    const s = this.state as unknown as Internals;
    const accept = s._llama?._bindings?.AddonSampler?.acceptGrammarEvaluationStateToken;
    if (typeof accept !== 'function') {
      throw new TurnstreamError(
        ErrorCodes.INTERNAL,
        'this node-llama-cpp cannot advance a grammar with a token drawn by the gateway (response_format with logprobs); 3.21.1 can',
      );
    }
    accept(s._state, token);
  }
}
