/**
 * `rl-training-headers`, turnstream's OpenClaw plugin: every LLM request an OpenClaw agent sends
 * to turnstream says which session it belongs to (`X-Session-Id`, OpenClaw's session id) and
 * whether it is a main turn (a run the user started: trigger `user`) or a side turn (trigger
 * `heartbeat`, `memory` or `cron`: recorded, never trained), as OpenClaw-RL's plugin of the same
 * name does. Header names are set under `plugins.entries.rl-training-headers.config`.
 *
 * How. `before_prompt_build` records each run's session id and turn type (per-run state, dropped
 * at `agent_end`); the headers are added by the provider hook `resolveTransportTurnState` of the
 * providers named in the config (default `turnstream`, the provider that points at the gateway).
 * The reference instead patches `globalThis.fetch` and keeps the state in an AsyncLocalStorage
 * entered from the hook; on OpenClaw 2026.9 neither reaches the request: model requests go through
 * OpenClaw's own guarded fetch, and hook handlers run in an async context of their own.
 *
 * OpenClaw runs one run per session at a time; a run nested in another of the same session (a
 * memory flush before compaction) is kept on a per-session stack, so the outer run's turn type
 * is back once the nested run ends. A request of a session with no run in progress is not a user
 * turn: it is marked side.
 *
 * OpenClaw loads this file from source; it imports nothing but Node's own modules.
 */

/** Triggers of housekeeping runs: their turns are side turns. */
export const SIDE_TRIGGERS: ReadonlySet<string> = new Set(['heartbeat', 'memory', 'cron']);

export interface RlTrainingHeadersConfig {
  /** @default 'X-Session-Id' */
  sessionIdHeader: string;
  /** @default 'X-Turn-Type' */
  turnTypeHeader: string;
  /** Providers (ids under `models.providers`) whose requests get the headers. @default ['turnstream'] */
  providers: string[];
}

/** The part of OpenClaw's hook context this plugin reads. */
export interface RunContext {
  runId?: string;
  sessionId?: string;
  trigger?: string;
}

/** The part of OpenClaw's `resolveTransportTurnState` context this plugin reads. */
export interface TransportTurnContext {
  provider: string;
  sessionId?: string;
}

/** The part of OpenClaw's plugin API this plugin uses. */
export interface PluginApi {
  pluginConfig?: unknown;
  logger?: { info(message: string): void };
  on(hook: 'before_prompt_build' | 'agent_end', handler: (event: unknown, ctx: RunContext) => unknown): void;
  registerProvider(provider: {
    id: string;
    label: string;
    resolveTransportTurnState: (ctx: TransportTurnContext) => { headers: Record<string, string> };
  }): void;
}

export type TurnType = 'main' | 'side';

export const turnTypeOf = (trigger: string | undefined): TurnType => (trigger && SIDE_TRIGGERS.has(trigger) ? 'side' : 'main');

export function resolveConfig(raw: unknown): RlTrainingHeadersConfig {
  const c = (raw && typeof raw === 'object' ? raw : {}) as Partial<RlTrainingHeadersConfig>;
  return {
    sessionIdHeader: c.sessionIdHeader || 'X-Session-Id',
    turnTypeHeader: c.turnTypeHeader || 'X-Turn-Type',
    providers: c.providers?.length ? c.providers : ['turnstream'],
  };
}

/** Runs in progress, per session, newest last. */
export class RunRegistry {
  private readonly runs = new Map<string, Array<{ runId: string; turnType: TurnType }>>();

  start(ctx: RunContext): void {
    if (!ctx.sessionId) return;
    const runId = ctx.runId ?? '';
    const stack = (this.runs.get(ctx.sessionId) ?? []).filter((r) => r.runId !== runId);
    stack.push({ runId, turnType: turnTypeOf(ctx.trigger) });
    this.runs.set(ctx.sessionId, stack);
  }

  end(ctx: RunContext): void {
    if (!ctx.sessionId) return;
    const stack = (this.runs.get(ctx.sessionId) ?? []).filter((r) => r.runId !== (ctx.runId ?? ''));
    if (stack.length > 0) this.runs.set(ctx.sessionId, stack);
    else this.runs.delete(ctx.sessionId);
  }

  /** The turn type of the session's newest run in progress; side when none is. */
  turnType(sessionId: string): TurnType {
    return this.runs.get(sessionId)?.at(-1)?.turnType ?? 'side';
  }

  /** Sessions with a run in progress. */
  get size(): number {
    return this.runs.size;
  }
}

/** The headers of one request of `sessionId` (no session: only the turn type, side). */
export function headersFor(config: RlTrainingHeadersConfig, runs: RunRegistry, sessionId: string | undefined): Record<string, string> {
  if (!sessionId) return { [config.turnTypeHeader]: 'side' };
  return { [config.sessionIdHeader]: sessionId, [config.turnTypeHeader]: runs.turnType(sessionId) };
}

export default function register(api: PluginApi): void {
  const config = resolveConfig(api.pluginConfig);
  const runs = new RunRegistry();
  api.on('before_prompt_build', (_event, ctx) => {
    runs.start(ctx);
    return {};
  });
  api.on('agent_end', (_event, ctx) => runs.end(ctx));
  for (const id of config.providers) {
    api.registerProvider({ id, label: id, resolveTransportTurnState: (ctx) => ({ headers: headersFor(config, runs, ctx.sessionId) }) });
  }
  api.logger?.info(
    `rl-training-headers: ${config.sessionIdHeader} / ${config.turnTypeHeader} on requests to ${config.providers.join(', ')}`,
  );
}
