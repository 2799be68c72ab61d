/**
 * `--agent openclaw` on one task: the real OpenClaw agent (npm `openclaw`, Node 24) plays it inside
 * the gym's sandbox against the real default model (SmolLM2-135M-Instruct on llama.cpp) through
 * the gateway. The sandbox has no network: every call goes through the gateway bridge, so the
 * gateway sees the rollout's session, turn type and metadata on each, and the rollout's turn ids
 * are the gateway's. OpenClaw's first call sends an ~8k-token prompt: minutes on a CPU.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { loadConfig } from '../../cli/config.ts';
import type { Gateway } from '../../gateway/index.ts';
import { runRollout } from '../../gym/agent/run-rollout.ts';
import { parseTaskSuite } from '../../gym/tasks/parse-task-suite.ts';
import { DEFAULT_TIMEOUT_SECONDS } from '../../integrations/openclaw/index.ts';
import { resolveModel } from '../../policy/index.ts';
import { createLlamaGateway } from '../support/llama-gateway.ts';

const TASK = {
  id: 'oc-hello',
  instruction: 'Create a file named hello.txt that contains the word hello.',
  files: { 'notes.txt': 'remember the milk\n' },
  verify: { command: 'grep -qi hello hello.txt' },
  max_turns: 2,
};
const SESSION = 'gym-openclaw-e2e';

/** Where OpenClaw is installed: where the CLI installs it (as root not under /root, which the sandbox's user cannot enter). */
const installDir = (): string | undefined => process.env.TURNSTREAM_OPENCLAW_CACHE || undefined;

let tmp = '';
let gw: Gateway;
let url = '';
/** What the gateway saw of each chat call: headers, metadata, its turn id and how long it took. */
const seen: Array<{ session: string; turnType: string; metadata: unknown; turnId: string; ms: number; promptChars: number }> = [];

before(async () => {
  const model = await resolveModel('smollm2-135m', { cacheDir: loadConfig().model.cacheDir });
  tmp = await mkdtemp(join(tmpdir(), 'ts-e2e-gym-openclaw-'));
  gw = createLlamaGateway(
    tmp,
    model,
    { maxPinned: 0 },
    // As the gym's gateway for OpenClaw (gym/runner/gym-gateway.ts): OpenClaw's request timeout bounds the first turn, not the gateway's own 300 s.
    { generationTimeoutMs: DEFAULT_TIMEOUT_SECONDS * 1000 },
  );
  gw.app.addHook('preHandler', async (request, reply) => {
    if (!request.url.endsWith('/chat/completions')) return;
    const body = request.body as { metadata?: unknown; messages?: unknown[] };
    const entry = {
      session: String(request.headers['x-session-id']),
      turnType: String(request.headers['x-turn-type']),
      metadata: body?.metadata,
      turnId: '',
      ms: 0,
      promptChars: JSON.stringify(body?.messages ?? []).length,
    };
    seen.push(entry);
    const started = Date.now();
    // Streamed answers are written by hand (the reply is hijacked, its headers passed to writeHead,
    // where the raw response does not keep them): the turn id is the reply's header, the raw response's end the call's.
    reply.raw.once('close', () => {
      entry.turnId = String(reply.getHeader('x-turn-id') ?? '');
      entry.ms = Date.now() - started;
    });
  });
  url = await gw.start();
});

after(async () => {
  await gw?.stop();
  if (tmp) await rm(tmp, { recursive: true, force: true });
});

test('OpenClaw plays a task in the sandbox through the gateway bridge, on SmolLM2', { timeout: 1_800_000 }, async () => {
  const [task] = parseTaskSuite(JSON.stringify(TASK));
  const t0 = Date.now();
  const r = await runRollout(task, {
    agent: 'openclaw',
    openclaw: { installDir: installDir(), minTimeoutS: 1500 },
    baseURL: url,
    model: 'smollm2-135m',
    sessionId: SESSION,
    metadata: { gym_task: task.id, gym_group: 'e2e-group', gym_rollout: '0' },
    sampling: { temperature: 0.7, maxTokens: 64, seed: 1 },
  });
  const ours = seen.filter((s) => s.session === SESSION);
  process.stderr.write(
    `openclaw rollout: ${r.stoppedBy}, ${r.steps} calls, verdict ${r.verdict.passed} (${r.verdict.detail.replace(/\n/g, ' | ')}), ` +
      `turns ${ours.map((s) => `${(s.ms / 1000).toFixed(1)} s (${s.promptChars} prompt chars)`).join(', ')}, ` +
      `wall ${((Date.now() - t0) / 1000).toFixed(0)} s; final: ${JSON.stringify((r.finalAnswer ?? '').slice(0, 200))}\n`,
  );
  assert.notEqual(r.stoppedBy, 'error', r.error);
  assert.ok(r.steps >= 1 && r.steps <= task.maxTurns, `${r.steps} calls`);
  assert.deepEqual(
    r.turnIds,
    ours.map((s) => s.turnId),
    'the rollout’s turn ids are the gateway’s, in order',
  );
  assert.equal(seen.length, ours.length, 'every call the gateway got carried the rollout’s session');
  for (const s of ours) {
    assert.equal(s.turnType, 'main');
    // The bridge adds the rollout's metadata to whatever OpenClaw sends.
    const gym = Object.entries((s.metadata ?? {}) as Record<string, unknown>).filter(([k]) => k.startsWith('gym_'));
    assert.deepEqual(Object.fromEntries(gym), { gym_task: 'oc-hello', gym_group: 'e2e-group', gym_rollout: '0' });
  }
  assert.equal(r.verdict.kind, 'command');
  assert.ok(
    (r.messages as Array<{ role: string }>).some((m) => m.role === 'system'),
    'the transcript as OpenClaw sent it',
  );
  assert.ok(r.timings.generationMs > 0);
});
