/**
 * `--agent openclaw`: the real OpenClaw agent (npm `openclaw`, Node 24) plays the episode inside
 * the rollout's sandbox, as ClawGym-RL runs it: `openclaw agent exec` with the task's instruction
 * as its message and the workspace as its working folder (no bootstrap files written there, its
 * state in the sandbox's private /tmp), its `turnstream` provider pointed at the gateway.
 *
 * The sandbox has no network. OpenClaw reaches the gateway, and nothing else, through the gateway
 * bridge (gateway-bridge.ts): a unix socket made in the workspace for the episode (removed before
 * the verifier runs), forwarded from the sandbox's own 127.0.0.1 (bubblewrap brings up a
 * loopback in its empty network namespace). The bridge adds the rollout's headers, metadata and
 * sampling to each call and refuses calls past max_turns; turn ids come from the gateway's
 * answers as they pass (served versions too, except for streamed answers: −1).
 *
 * OpenClaw's install (its Node and its packages) is mounted read-only into the sandbox at the
 * same path. It runs under the sandbox's limits but for the address space: V8 and WebAssembly
 * reserve far more than they use, so RLIMIT_AS is raised, and the heap is bounded by Node's
 * `--max-old-space-size` instead.
 */
import { access, constants, stat } from 'node:fs/promises';
import { dirname, join, sep } from 'node:path';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';
import { ensureOpenClaw, type OpenClawInstall } from '../../integrations/index.ts';
import { DEFAULT_SYSTEM_PATHS, type Sandbox, type SandboxCaps, type SandboxOptions } from '../sandbox/sandbox.ts';
import type { Task } from '../tasks/task.ts';
import { FORWARDER_SOURCE } from './bridge-forwarder.ts';
import { aborted, episodeClock } from './episode-clock.ts';
import { openAIBaseURL, rolloutHeaders } from './gateway-client.ts';
import { startGatewayBridge } from './gateway-bridge.ts';
import type { Episode, OpenClawAgentOptions, RolloutOptions } from './rollout-types.ts';
import { DEFAULT_SAMPLING } from './builtin-agent.ts';

/** Where the bridge's socket is made in the workspace, for the episode only. */
export const BRIDGE_SOCKET = '.turnstream-gateway.sock';
const STATE = '/tmp/openclaw';

/** The host folders OpenClaw needs inside the sandbox: its install and the folder of its Node. */
const mountsOf = (install: OpenClawInstall): string[] => [...new Set([install.dir, dirname(install.node)])];

const below = (p: string, q: string): boolean => p === q || p.startsWith(`${q}/`);

/**
 * The installed OpenClaw the options name, installed first where needed.
 * @throws TurnstreamError TS_ERR_PREREQUISITE where the sandbox's user could not reach it
 */
export async function resolveOpenClaw(o: OpenClawAgentOptions = {}): Promise<OpenClawInstall> {
  const install = o.install ?? (await ensureOpenClaw({ dir: o.installDir }));
  await access(install.node, constants.X_OK);
  if (process.getuid?.() !== 0) return install;
  // A root process runs sandboxes as an unprivileged user, who must be able to reach what is mounted.
  for (const path of mountsOf(install)) {
    const parts = path.split(sep).filter(Boolean);
    for (let i = 1; i <= parts.length; i++) {
      const dir = sep + parts.slice(0, i).join(sep);
      if (((await stat(dir)).mode & 0o001) === 0)
        throw new TurnstreamError(
          ErrorCodes.PREREQUISITE,
          `OpenClaw at ${path} cannot be mounted into the sandbox: ${dir} is closed to other users, and a root process runs sandboxes as an unprivileged user; install it where others can read (OpenClawAgentOptions.installDir)`,
        );
    }
  }
  return install;
}

/**
 * The caps of an OpenClaw rollout's sandbox: room for Node's 2 GiB heap (`maxOldSpaceMiB`), its
 * code and buffers and the forwarder, and for the 512 processes and threads its command may have.
 */
export const OPENCLAW_CAPS: Readonly<SandboxCaps> = Object.freeze({ memoryBytes: 4 * 1024 ** 3, processes: 640 });

/**
 * The sandbox options with OpenClaw's install (and its Node) mounted read-only at the same paths,
 * and {@link OPENCLAW_CAPS} under the caps `base` sets.
 */
export function openClawSandboxOptions(base: Omit<SandboxOptions, 'files'>, install: OpenClawInstall): Omit<SandboxOptions, 'files'> {
  let paths = [...(base.systemPaths ?? DEFAULT_SYSTEM_PATHS)];
  for (const p of mountsOf(install)) {
    if (paths.some((q) => below(p, q))) continue;
    paths = [...paths.filter((q) => !below(q, p)), p];
  }
  return { ...base, systemPaths: paths, caps: { ...OPENCLAW_CAPS, ...base.caps } };
}

/** OpenClaw's config: the `turnstream` provider at the forwarder, the workspace as its workspace. */
function config(model: string, port: number, o: OpenClawAgentOptions, maxTokens: number): string {
  return JSON.stringify({
    models: {
      providers: {
        turnstream: {
          baseUrl: `http://127.0.0.1:${port}/v1`,
          apiKey: 'unused', // the bridge adds the real key; it never enters the sandbox
          api: 'openai-completions',
          models: [{ id: model, name: model, reasoning: false, input: ['text'], contextWindow: o.contextWindow ?? 131072, maxTokens }],
        },
      },
    },
    agents: { defaults: { model: { primary: `turnstream/${model}` }, workspace: '/workspace' } },
  });
}

/** Runs the forwarder, waits for it, then OpenClaw on the instruction (stdin). */
const SCRIPT = `
mkdir -p ${STATE}/state ${STATE}/home
printf '%s' "$TS_OC_CONFIG" > ${STATE}/openclaw.json
"$TS_NODE" -e "$TS_FWD_SOURCE" </dev/null &
i=0
while [ ! -e "$TS_FWD_READY" ]; do
  i=$((i + 1)); if [ $i -gt 400 ]; then echo "the gateway forwarder did not start" >&2; exit 97; fi
  sleep 0.05
done
"$TS_NODE" "$TS_OC_CLI" agent exec --message-file - --cwd /workspace --config ${STATE}/openclaw.json --state-dir ${STATE}/state \\
  --model "turnstream/$TS_MODEL" --timeout "$TS_TIMEOUT" --json $TS_LEAN
`;

/** OpenClaw's `--json` envelope (the fields read here). */
interface Envelope {
  ok?: boolean;
  status?: string;
  final?: string | null;
  error?: { message?: string; kind?: string };
  toolSummary?: { totalToolTimeMs?: number };
}

/** The JSON envelope in OpenClaw's stdout (its last JSON object), or null. */
export function parseEnvelope(stdout: string): Envelope | null {
  const start = stdout.indexOf('{');
  if (start < 0) return null;
  for (let i = start; i >= 0; i = stdout.indexOf('\n{', i + 1)) {
    try {
      const v: unknown = JSON.parse(stdout.slice(i === start ? i : i + 1));
      if (v && typeof v === 'object') return v as Envelope;
    } catch {
      // not the envelope's start
    }
  }
  return null;
}

/** What the OpenClaw agent needs: the rollout's options, its task and sandbox, the install. */
export interface OpenClawAgentContext {
  task: Task;
  sandbox: Sandbox;
  install: OpenClawInstall;
  rollout: RolloutOptions;
}

/**
 * Plays one episode with OpenClaw in the sandbox.
 * @throws TurnstreamError TS_ERR_ABORTED when the caller's signal aborts
 */
export async function runOpenClawAgent(ctx: OpenClawAgentContext): Promise<Episode> {
  const { task, sandbox, install, rollout } = ctx;
  const o = rollout.openclaw ?? {};
  const sampling = { ...DEFAULT_SAMPLING, ...rollout.sampling };
  const timeoutS = Math.max(task.timeoutS, o.minTimeoutS ?? 600);
  const port = o.port ?? 18080;
  const clock = episodeClock(timeoutS * 1000, rollout.signal);
  const socket = join(sandbox.hostWorkspace, BRIDGE_SOCKET);
  const bridge = await startGatewayBridge({
    socketPath: socket,
    gateway: openAIBaseURL(rollout.baseURL),
    headers: { ...rolloutHeaders(rollout), ...(rollout.apiKey ? { Authorization: `Bearer ${rollout.apiKey}` } : {}) },
    metadata: rollout.metadata,
    sampling,
    maxCalls: task.maxTurns,
  });
  const ep: Episode = {
    turnIds: [],
    policyVersions: [],
    messages: [{ role: 'user', content: task.instruction }],
    finalAnswer: null,
    steps: 0,
    stoppedBy: 'error',
    generationMs: 0,
    toolMs: 0,
  };
  try {
    const r = await sandbox.sh(SCRIPT, {
      stdin: task.instruction,
      signal: clock.signal,
      env: {
        HOME: `${STATE}/home`,
        PATH: `${dirname(install.node)}:/usr/local/bin:/usr/bin:/bin`,
        NODE_OPTIONS: `--max-old-space-size=${o.maxOldSpaceMiB ?? 2048}`,
        OPENCLAW_DISABLE_BONJOUR: '1',
        OPENCLAW_NO_AUTO_UPDATE: '1',
        NO_COLOR: '1',
        TS_NODE: install.node,
        TS_OC_CLI: install.cli,
        TS_OC_CONFIG: config(rollout.model, port, o, sampling.maxTokens),
        TS_FWD_SOURCE: FORWARDER_SOURCE,
        TS_FWD_PORT: String(port),
        TS_FWD_SOCKET: `/workspace/${BRIDGE_SOCKET}`,
        TS_FWD_READY: `${STATE}/forwarder.ready`,
        TS_MODEL: rollout.model,
        TS_TIMEOUT: String(timeoutS),
        TS_LEAN: o.lean === false ? '' : '--local-model-lean',
      },
      limits: {
        wallMs: timeoutS * 1000 + 30_000,
        cpuSeconds: timeoutS + 60,
        memoryBytes: 2 ** 40,
        processes: 512,
        outputBytes: 16 * 1024 * 1024,
        ...rollout.toolLimits,
      },
    });
    const env = parseEnvelope(r.stdout);
    ep.finalAnswer = typeof env?.final === 'string' ? env.final : null;
    ep.toolMs = env?.toolSummary?.totalToolTimeMs ?? 0;
    if (bridge.refused > 0) ep.stoppedBy = 'max_turns';
    else if (env?.status === 'timeout' || r.timedOut) ep.stoppedBy = 'timeout';
    else if (env?.ok && r.exitCode === 0) ep.stoppedBy = 'answer';
    else {
      ep.stoppedBy = 'error';
      const tail = `${r.stderr}\n${r.stdout}`.trim().split('\n').slice(-5).join('\n').slice(-1000);
      ep.error = env?.error?.message ?? `openclaw ended with ${r.exitCode ?? r.signal}: ${tail}`;
    }
  } catch (err) {
    if (clock.callerAborted()) throw aborted();
    if (!clock.timedOut()) throw err;
    ep.stoppedBy = 'timeout';
  } finally {
    clock.dispose();
    await bridge.close();
    const calls = bridge.calls;
    ep.turnIds = calls.map((c) => c.turnId);
    ep.policyVersions = calls.map((c) => c.policyVersion);
    ep.steps = calls.length;
    ep.generationMs = calls.reduce((s, c) => s + c.ms, 0);
    const last = calls.at(-1);
    if (last) ep.messages = [...last.messages, ...(last.reply ? [last.reply] : [])];
    ep.finalAnswer ??= last?.reply?.content ?? null;
  }
  return ep;
}
