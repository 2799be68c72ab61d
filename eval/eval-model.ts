/**
 * The model side of an in-process evaluation run: replies from the current version, and a
 * learner step that makes the next one. For a GGUF model it is the very serving engine
 * (gateway/llama-engine.ts: chat template, sampling, log-probs) over a weight store of the run's
 * own, and the very learner lineage (trainer/policy-lineage.ts: LoRA in tfjs, versions written as
 * llama.cpp adapters and swapped into the engine) — only Kafka and HTTP are left out. The base
 * model is loaded once per process and shared by every run.
 */
import { randomInt } from 'node:crypto';
import { join } from 'node:path';
import { invalidInput } from '../core/index.ts';
import { type ChatRequest, LlamaEngine } from '../gateway/index.ts';
import {
  loadCheckpoint,
  loadTfLlama,
  renderPrompt,
  sampleMany,
  ByteTokenizer,
  toPolicyMessages,
  type LlamaConfig,
  type LoraConfig,
  type PolicyHandle,
  type TfLlamaModel,
  type TransformerModel,
} from '../policy/index.ts';
import { createPolicyTeacher, LlamaTeacher, type Teacher } from '../processors/index.ts';
import type { ChatMessage, Sample } from '../schemas/index.ts';
import {
  LEARNER_DEFAULTS,
  LoraLineage,
  PolicyStepper,
  trainMetricsOf,
  type LearnerStepOptions,
  type StepMetrics,
  type SampleText,
} from '../trainer/index.ts';

/** A reply and what the Turn would record of it. */
export interface EvalReply {
  text: string;
  promptIds: number[];
  ids: number[];
  logprobs: number[];
  exactLogprobs: boolean;
  /** The temperature and top-p the reply was drawn with (the trainer scores the same distribution). */
  temperature: number;
  topP: number;
  /** The version that answered. */
  version: number;
}

export interface ReplyOptions {
  seed: number;
  /** Replies to draw, one after another. @default 1 */
  n?: number;
  /** An earlier version to answer with, where the model keeps them ({@link EvalModel.pastVersions}). @default the current one */
  version?: number;
}

export interface EvalModel {
  readonly modelId: string;
  /** The version replies come from. */
  readonly version: number;
  /** Whether `reply` can answer with an earlier version (LoRA versions are kept; a model trained in place is not). */
  readonly pastVersions: boolean;
  reply(messages: ChatMessage[], opts: ReplyOptions): Promise<EvalReply[]>;
  /** The OPD teacher the sample builder uses. */
  readonly teacher: Teacher;
  /** How the consensus reads a sample's prompt and reply (the model's own tokenizer). @default the byte tokenizer */
  readonly sampleText?: SampleText;
  /** One learner step; a new version when it trained anything (and was not undone). */
  step(samples: Sample[]): Promise<StepMetrics>;
  close(): Promise<void>;
}

export interface EvalModels {
  /** A fresh run from version 0. */
  open(runId: string): Promise<EvalModel>;
  close(): Promise<void>;
}

/**
 * How eval runs on a GGUF model sample, in-process and through the gateway alike. Top-p 1, not the
 * gateway's 0.9: the eval learns from the model's whole distribution, and a pipeline run samples
 * exactly as the in-process run of the same seed.
 */
export const EVAL_SAMPLING: Readonly<Required<SamplingDefaults>> = { temperature: 0.7, topP: 1, maxTokens: 64 };

export interface SamplingDefaults {
  /** @default 0.7 */
  temperature?: number;
  /** @default 1 */
  topP?: number;
  /** Longest reply. @default 64 */
  maxTokens?: number;
}

const message = (role: string, content: string): ChatMessage => ({ role, content, name: null, toolCallId: null, toolCalls: [] });
export { message as chatMessage };

/**
 * The seed of the i-th reply drawn for one request seed. `eval --pipeline` sends the gateway the
 * same seeds, so that a pipeline run and an in-process run of one (persona, seed) sample alike.
 */
export const sampleSeed = (seed: number, i: number): number => seed * 7919 + i;

function chatRequest(messages: ChatMessage[], s: Required<SamplingDefaults>, seed: number, model = ''): ChatRequest {
  return {
    model,
    messages,
    tools: null,
    toolChoice: null,
    stream: false,
    includeUsage: false,
    metadata: {},
    temperature: s.temperature,
    topP: s.topP,
    maxTokens: s.maxTokens,
    stop: [],
    seed,
    logprobs: false,
    topLogprobs: null,
    user: null,
    bodySessionId: null,
    bodyTurnType: null,
    bodySessionDone: undefined,
    upstreamBody: {},
  };
}

export interface LlamaEvalOptions {
  model: { name: string; path: string; sha256: string };
  /** Where each run keeps its weight store. */
  dir: string;
  systemPrompt?: string;
  sampling?: SamplingDefaults;
  lora?: Partial<LoraConfig>;
  /** The learning rate (eval's learner: eval/eval-learner.ts). */
  lr: number;
  step?: Omit<LearnerStepOptions, 'reference' | 'lr'>;
  /** llama.cpp threads. @default 1 */
  threads?: number;
  /** Parallel sequences, as the gateway of `eval --pipeline` has. @default 2 */
  parallel?: number;
  /** Tokens of one training pass. @default LEARNER_DEFAULTS.maxTrainTokens (1024, as every learner) */
  maxTrainTokens?: number;
}

/** Evaluation runs on a GGUF model served by llama.cpp, trained as LoRA adapters. */
export async function llamaEvalModels(o: LlamaEvalOptions): Promise<EvalModels> {
  const base: { model: TfLlamaModel; config: LlamaConfig; architecture: string } = await loadTfLlama(o.model.path);
  const teacher = await LlamaTeacher.load({ model: { name: o.model.name, path: o.model.path }, systemPrompt: o.systemPrompt });
  const sampling = { ...EVAL_SAMPLING, ...o.sampling };
  return {
    async open(runId: string): Promise<EvalModel> {
      const weightsDir = join(o.dir, runId);
      const engine = new LlamaEngine({
        model: { name: o.model.name, modelId: runId, path: o.model.path, sha256: o.model.sha256 },
        weightsDir,
        systemPrompt: o.systemPrompt,
        threads: o.threads ?? 1,
        parallel: o.parallel ?? 2,
        contextSize: 1024,
        // One: the peak version a run measures again at its end (run-eval.ts).
        maxPinned: 1,
      });
      await engine.start();
      const lineage = new LoraLineage({
        weightsDir,
        modelId: runId,
        base: { name: o.model.name, path: o.model.path, sha256: o.model.sha256 },
        lora: o.lora,
        maxTrainTokens: o.maxTrainTokens ?? LEARNER_DEFAULTS.maxTrainTokens,
        baseTf: base,
      });
      await lineage.init();
      const { policy } = await lineage.load(0);
      return steppedModel({
        modelId: runId,
        pastVersions: true,
        teacher,
        sampleText: lineage.sampleText,
        stepper: new PolicyStepper(policy, { optimizer: { lr: o.lr }, step: { measureAfter: false, ...o.step } }),
        async reply(messages, r) {
          const signal = new AbortController().signal;
          // One at a time, as the gateway serves `eval --pipeline`: llama.cpp's sums differ with the
          // batch (4 sequences decoded together part from 1 by a token now and then), and a drawn
          // token that differs makes the two modes' runs part for good.
          const out: EvalReply[] = [];
          for (let i = 0; i < (r.n ?? 1); i++) {
            const model = r.version === undefined ? '' : `${runId}@${r.version}`;
            const res = await engine.complete(chatRequest(messages, sampling, sampleSeed(r.seed, i), model), { signal });
            out.push({
              text: res.content ?? '',
              promptIds: res.promptTokenIds,
              ids: res.responseTokenIds,
              logprobs: res.responseLogprobs,
              exactLogprobs: res.exactLogprobs,
              temperature: res.sampling.temperature ?? sampling.temperature,
              topP: res.sampling.topP ?? sampling.topP,
              version: res.policyVersion,
            });
          }
          return out;
        },
        async publish(version, metrics) {
          const saved = await lineage.save(version, version - 1, metrics);
          await engine.offer({
            modelId: runId,
            version,
            parentVersion: version - 1,
            uri: saved.uri,
            sha256: saved.sha256,
            format: lineage.format,
            baseModel: lineage.baseModel,
            metrics,
            createdAt: Date.now(),
          });
        },
        async close() {
          lineage.dispose();
          await engine.close();
        },
      });
    },
    async close() {
      base.model.dispose();
    },
  };
}

export interface BuiltinEvalOptions {
  /** The base checkpoint every run starts from. */
  baseUri: string;
  /** The frozen teacher (the base checkpoint as a policy). */
  teacherPolicy: PolicyHandle;
  lr: number;
  sampling?: SamplingDefaults;
  step?: Omit<LearnerStepOptions, 'reference' | 'lr'>;
}

/** Evaluation runs on the built-in tiny model (all its weights trained). */
export function builtinEvalModels(o: BuiltinEvalOptions): EvalModels {
  const tok = new ByteTokenizer();
  const teacher = createPolicyTeacher(o.teacherPolicy);
  const temperature = o.sampling?.temperature ?? 1;
  const maxTokens = o.sampling?.maxTokens ?? 120;
  return {
    async open(runId: string): Promise<EvalModel> {
      const { model }: { model: TransformerModel } = await loadCheckpoint(o.baseUri);
      return steppedModel({
        modelId: runId,
        pastVersions: false,
        teacher,
        stepper: new PolicyStepper(model, { optimizer: { lr: o.lr }, step: o.step }),
        async reply(messages, r, version) {
          if (r.version !== undefined && r.version !== version)
            throw invalidInput(`the built-in model is trained in place and keeps no v${r.version}`, 'version');
          const ids = renderPrompt(tok, toPolicyMessages(messages), {
            maxPromptTokens: Math.floor((model.config.contextLength * 3) / 4),
          }).ids;
          const replies = await sampleMany(model, ids, r.n ?? 1, { seed: r.seed, temperature, maxTokens });
          return replies.map((x) => ({
            text: x.text,
            promptIds: ids,
            ids: x.ids,
            logprobs: x.logprobs,
            exactLogprobs: true,
            temperature,
            topP: 1,
            version,
          }));
        },
        async close() {
          model.dispose();
        },
      });
    },
    async close() {},
  };
}

/** What a model of {@link steppedModel} brings: its replies, and what it does with each version the learner's step makes. */
interface SteppedModelParts {
  modelId: string;
  pastVersions: boolean;
  teacher: Teacher;
  sampleText?: SampleText;
  stepper: PolicyStepper;
  reply(messages: ChatMessage[], opts: ReplyOptions, version: number): Promise<EvalReply[]>;
  /** Makes `version` served (a LoRA version saved and offered to the engine). @default nothing: the model trained in place serves it */
  publish?(version: number, metrics: ReturnType<typeof trainMetricsOf>): Promise<void>;
  close(): Promise<void>;
}

/** An eval model trained by the learner's step (trainer/policy-stepper.ts): a new version each time a step trains anything and is not undone. */
function steppedModel(p: SteppedModelParts): EvalModel {
  let version = 0;
  return {
    modelId: p.modelId,
    pastVersions: p.pastVersions,
    get version() {
      return version;
    },
    teacher: p.teacher,
    sampleText: p.sampleText,
    reply: (messages, r) => p.reply(messages, r, version),
    async step(samples) {
      const t0 = performance.now();
      const m = await p.stepper.step(samples.map((sample) => ({ sample })));
      if (m.samples > 0 && !m.rejected) {
        version++;
        await p.publish?.(version, trainMetricsOf(m, { steps: version, droppedStale: 0, stepSeconds: (performance.now() - t0) / 1000 }));
      }
      return m;
    },
    async close() {
      p.stepper.dispose();
      await p.close();
    },
  };
}

/** A random seed for runs that do not fix one. */
export const randomSeed = (): number => randomInt(1, 2 ** 31);
