/**
 * One rollout: a task's episode by an agent in a sandbox of its own, through the gateway, and its
 * verdict. The runner groups rollouts (task × batch) and turns their verdicts into rewards.
 */
import type { SandboxLimits, SandboxOptions } from '../sandbox/sandbox.ts';
import type { Verdict } from '../verify/verify-rollout.ts';
import type { OpenClawInstall } from '../../integrations/index.ts';

/** Which agent plays the episode. */
export type AgentKind = 'builtin' | 'openclaw';

/** Why an episode ended. */
export type StoppedBy = 'answer' | 'max_turns' | 'timeout' | 'error';

/**
 * What every call of a rollout carries in the body's `metadata` (OpenAI's standard field: string
 * values), so the gateway can record which task, group and rollout a turn belongs to.
 */
export interface RolloutMetadata {
  /** The task's id. */
  gym_task: string;
  /** The group: task × batch. */
  gym_group: string;
  /** The rollout's index in its group. */
  gym_rollout: string;
  [key: string]: string;
}

/** Sampling of every model call. */
export interface SamplingOptions {
  /** @default 0.7 (the reference's rollout temperature) */
  temperature?: number;
  /** Most tokens of one reply. @default 256 */
  maxTokens?: number;
  /** Nucleus sampling. @default 1 (the whole distribution) */
  topP?: number;
  /** Seed of the first call; call k (from 0) gets seed + k. @default none (the engine's own randomness) */
  seed?: number;
}

/** Options of `runRollout`. */
export interface RolloutOptions {
  /** The gateway's OpenAI base URL (`http://127.0.0.1:30000/v1`; `/v1` is added when missing). */
  baseURL: string;
  /** The gateway's API key. @default 'unused' (a gateway without keys) */
  apiKey?: string;
  /** The model name sent in every call. */
  model: string;
  /** The rollout's session: `X-Session-Id` of every call. */
  sessionId: string;
  /** `X-Turn-Type` of every call: `side` records the turns without training on them (held-out evals). @default 'main' */
  turnType?: 'main' | 'side';
  /** `X-User-Id` of every call (a service key acting for a user). @default none */
  userId?: string;
  /** The body's `metadata` of every call. */
  metadata: RolloutMetadata;
  /** Sampling of every call. @default {@link SamplingOptions}' defaults */
  sampling?: SamplingOptions;
  /** Which agent plays. @default 'builtin' */
  agent?: AgentKind;
  /** The sandbox's options (its files are the task's). @default the sandbox's defaults */
  sandbox?: Omit<SandboxOptions, 'files'>;
  /** Limits of the agent's commands (tools and code blocks), over the sandbox's. @default the sandbox's */
  toolLimits?: Partial<SandboxLimits>;
  /** Limits of the verify command. @default VERIFY_LIMITS */
  verifyLimits?: Partial<SandboxLimits>;
  /** Characters of a tool's or code block's output the model sees. @default 2000 */
  toolOutputChars?: number;
  /**
   * The built-in agent's system prompt; null sends none (the gateway's default applies).
   * @default a short prompt naming the offered ways to act (code blocks), none for answer-only tasks
   */
  systemPrompt?: string | null;
  /** Retries of a model call the OpenAI client deems retriable (429, 5xx, connection errors). @default 2 */
  maxRetries?: number;
  /** The OpenClaw agent's options (`agent: 'openclaw'`). @default see OpenClawAgentOptions */
  openclaw?: OpenClawAgentOptions;
  /** Aborting (Ctrl-C) stops the episode and its commands, disposes the sandbox and rejects with TS_ERR_ABORTED. */
  signal?: AbortSignal;
}

/** One rollout's record. */
export interface RolloutResult {
  sessionId: string;
  taskId: string;
  /** One per model call, in order (the gateway's turn ids). */
  turnIds: string[];
  /** X-Policy-Version of each call. */
  policyVersions: number[];
  /** The whole transcript as sent and received. */
  messages: unknown[];
  /** The reply that ended the episode with no action (the last reply at max_turns); null when there was none. */
  finalAnswer: string | null;
  verdict: Verdict;
  /** Model calls. */
  steps: number;
  stoppedBy: StoppedBy;
  /** What went wrong when `stoppedBy` is `error`. */
  error?: string;
  timings: { generationMs: number; toolMs: number; verifyMs: number; totalMs: number };
}

/** What an agent's episode yields, before the verdict. */
export interface Episode {
  turnIds: string[];
  policyVersions: number[];
  messages: unknown[];
  finalAnswer: string | null;
  steps: number;
  stoppedBy: StoppedBy;
  error?: string;
  generationMs: number;
  toolMs: number;
}

/** Options of the OpenClaw agent (gym/agent/openclaw-agent.ts). */
export interface OpenClawAgentOptions {
  /** An installed OpenClaw. @default ensureOpenClaw({ dir: installDir }) (installed on first use, ≈ 830 MB) */
  install?: OpenClawInstall;
  /**
   * Where OpenClaw is installed; it must be reachable by the sandbox's user (a root process runs
   * sandboxes as an unprivileged uid, which cannot enter /root). @default ensureOpenClaw's (~/.cache/turnstream/openclaw-<version>)
   */
  installDir?: string;
  /**
   * Least wall-clock bound of an episode, seconds: OpenClaw's first call sends an ~8k-token
   * prompt, 1–3 minutes on a CPU. The episode's bound is the larger of this and the task's `timeout_s`. @default 600
   */
  minTimeoutS?: number;
  /** `--local-model-lean`: OpenClaw's reduced tool surface for small local models. @default true */
  lean?: boolean;
  /** The context window OpenClaw is told (the gateway fits longer prompts to the model). @default 131072 */
  contextWindow?: number;
  /** The loopback port OpenClaw's provider uses inside the sandbox. @default 18080 */
  port?: number;
  /** Heap bound of OpenClaw's Node, MiB. @default 2048 */
  maxOldSpaceMiB?: number;
}
