/**
 * The built-in teacher: the frozen base checkpoint of the built-in model (version 0 in the weight
 * store), loaded with the trainer's `loadPolicy({ weightsDir, version: 0 })`. It renders the
 * teacher prompt with the policy's own chat template and scores the response ids.
 */
import type { ChatMessage } from '../../schemas/index.ts';
import { toPolicyMessages } from '../../policy/index.ts';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import type { Teacher, TeacherScoreOptions, TeacherScores } from './teacher.ts';

/** What the teacher needs of a loaded policy (the trainer's `PolicyHandle` has it). */
export interface ScoringPolicy {
  readonly modelId: string;
  readonly version: number;
  readonly config: { contextLength: number };
  renderPrompt(
    messages: Array<{ role: 'system' | 'user' | 'assistant' | 'tool'; content: string }>,
    maxPromptTokens?: number,
  ): { ids: number[] };
  score(promptIds: number[], responseIds: number[]): Promise<number[]>;
}

export class PolicyTeacher implements Teacher {
  readonly id: string;
  constructor(private readonly policy: ScoringPolicy) {
    this.id = `policy:${policy.modelId}@v${policy.version}`;
  }

  async score(messages: ChatMessage[], responseTokenIds: number[], opts: TeacherScoreOptions = {}): Promise<TeacherScores> {
    if (opts.topK) {
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, 'the built-in teacher does not provide top-k log-probs; set topK to 0', {
        param: 'topK',
      });
    }
    // Prompt + response must fit the context: the prompt gets what the response leaves (the
    // template's truncation keeps the last user message, hence the hint, to the end).
    const room = this.policy.config.contextLength - responseTokenIds.length;
    if (room < 4) {
      throw new TurnstreamError(
        ErrorCodes.INVALID_INPUT,
        `a response of ${responseTokenIds.length} tokens leaves no room for a prompt in the teacher's context`,
        { retriable: false },
      );
    }
    const { ids } = this.policy.renderPrompt(
      toPolicyMessages(messages),
      Math.min(room, Math.floor((this.policy.config.contextLength * 3) / 4)),
    );
    return { logprobs: await this.policy.score(ids, responseTokenIds) };
  }
}

export const createPolicyTeacher = (policy: ScoringPolicy): PolicyTeacher => new PolicyTeacher(policy);
