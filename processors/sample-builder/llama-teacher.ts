/**
 * The OPD teacher of a Llama-family model: the same base plus the learner's current adapter, on
 * the hinted prompt (docs/design/algorithms.md §4, §6b). It does not score here: it renders the hinted
 * conversation with the model's own chat template and tools, exactly as the gateway rendered the
 * rollout, and hands the token ids to the learner (Sample.teacherPromptTokens), which scores the
 * response with the very weights it trains — so the OPD term holds the hint's effect, not the
 * engines' mismatch or the time between this sample and its training step.
 *
 * Only the tokenizer and template are needed: the model is loaded vocabulary-only.
 */
import { ChatFormat, llamaRuntime, type OpenAITool } from '../../policy/index.ts';
import type { ChatMessage } from '../../schemas/index.ts';
import { ErrorCodes, TurnstreamError, type Logger } from '../../core/index.ts';
import type { Teacher, TeacherScoreOptions, TeacherScores } from './teacher.ts';

export interface LlamaTeacherOptions {
  /** The served model: its GGUF and name. */
  model: { name: string; path: string };
  /** The gateway's system prompt for conversations without one (the rollout was rendered with it). */
  systemPrompt?: string;
  logger?: Pick<Logger, 'info' | 'warn' | 'debug'>;
}

export class LlamaTeacher implements Teacher {
  readonly id: string;

  private constructor(
    private readonly format: ChatFormat,
    name: string,
  ) {
    this.id = `llama:${name}+current-adapter`;
  }

  static async load(o: LlamaTeacherOptions): Promise<LlamaTeacher> {
    const llama = await llamaRuntime({ logger: o.logger });
    const model = await llama.loadModel({ modelPath: o.model.path, vocabOnly: true });
    return new LlamaTeacher(new ChatFormat(model, { defaultSystemPrompt: o.systemPrompt }), o.model.name);
  }

  async score(messages: ChatMessage[], responseTokenIds: number[], opts: TeacherScoreOptions = {}): Promise<TeacherScores> {
    if (opts.topK) {
      throw new TurnstreamError(
        ErrorCodes.INVALID_INPUT,
        'the llama teacher is scored by the learner and gives no top-k; set TEACHER_TOP_K=0 (TRAIN_OPD_ADVANTAGE=distribution has the learner match its top-k)',
        { param: 'topK' },
      );
    }
    const rollout = opts.rollout;
    let tools: OpenAITool[] | null = null;
    if (rollout?.toolsJson) {
      try {
        tools = JSON.parse(rollout.toolsJson) as OpenAITool[];
      } catch {
        tools = null; // the gateway stored what it validated; unreadable here means none was rendered
      }
    }
    // Fit as the gateway did: the rollout prompt's budget plus the hint's own tokens.
    const hinted = this.format.tokenize(messages, tools);
    let budget = hinted.length;
    if (rollout) budget = rollout.promptTokens + Math.max(0, hinted.length - this.format.tokenize(rollout.messages, tools).length);
    const { tokens } = this.format.render(messages, tools, budget);
    void responseTokenIds;
    return { logprobs: [], deferredPromptTokens: tokens };
  }
}
