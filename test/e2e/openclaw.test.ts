/**
 * The real OpenClaw agent (npm `openclaw`, Node 24) talking to the gateway (built-in tiny model),
 * turns to Kafka, the session assembler pairing them.
 *
 * Without a plugin, OpenClaw sends no session header and appends an internal-context user message
 * to every request that it does not keep in its history: its turns (one per request it sends, a
 * retried one included) must still be main turns of ONE inferred session, and the answered turn's
 * next state must be the correction's user message (not the injected context). With turnstream's rl-training-headers plugin installed by
 * `turnstream openclaw install-plugin`, the turns carry OpenClaw's session id, and a heartbeat run
 * of the same session is a side turn.
 */
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { mkdir, mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { promisify } from 'node:util';
import { createGateway, type Gateway } from '../../gateway/index.ts';
import { startSessionAssembler } from '../../processors/index.ts';
import type { Turn } from '../../schemas/index.ts';
import type { ProcessorHandle } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { family, readAll, waitFor, type Family } from '../integration/processors/support.ts';
import { ensureOpenClaw, openclaw, startOpenClawGateway, type OpenClawEnv } from '../support/openclaw.ts';
import { ensureStack, REPO_ROOT } from '../support/stack.ts';

const TINY = { contextLength: 128, dModel: 32, nLayers: 1, nHeads: 2, dFf: 64 };
const INTERNAL_CONTEXT = '<<<BEGIN_OPENCLAW_INTERNAL_CONTEXT>>>';

describe('the real OpenClaw agent through the gateway', { timeout: 1_200_000 }, () => {
  let tmp: string;
  let f: Family;
  let gw: Gateway;
  let url: string;
  let model: string;
  let install: Awaited<ReturnType<typeof ensureOpenClaw>>;
  let assembler: ProcessorHandle;
  /** Every chat request the gateway received: OpenClaw may retry one, and each is a turn. */
  const chatRequests: Array<{ messages?: Array<{ role: string; content?: unknown }> }> = [];

  before(async () => {
    const stack = await ensureStack();
    install = await ensureOpenClaw();
    tmp = await mkdtemp(join(tmpdir(), 'ts-e2e-openclaw-'));
    f = await family('e2e-openclaw');
    gw = createGateway({
      port: 0,
      home: tmp,
      logger: createLogger('gateway-e2e', 'warn'),
      builtin: { weightsDir: join(tmp, 'weights'), initConfig: TINY, defaultMaxTokens: 8 },
      kafka: { brokers: [stack.brokers], registryUrl: stack.registryUrl, naming: { prefix: f.prefix } },
    });
    gw.app.addHook('preHandler', async (request) => {
      if (request.url.endsWith('/chat/completions')) chatRequests.push(request.body as (typeof chatRequests)[number]);
    });
    url = await gw.start();
    model = ((await (await fetch(`${url}/v1/models`)).json()) as { data: Array<{ id: string }> }).data[0].id;
    assembler = await startSessionAssembler({
      kafka: f.kafka,
      codecs: f.codecs,
      idleTimeoutMs: 600_000,
      feedbackGraceMs: 0,
      quietMs: 1000,
    });
    await assembler.ready;
  });

  after(async () => {
    await assembler?.stop();
    await gw?.stop();
    await f?.close();
    if (tmp) await rm(tmp, { recursive: true, force: true });
  });

  /** A fresh OpenClaw home whose config points the `turnstream` provider at the gateway. */
  async function openclawEnv(name: string, extra: Record<string, unknown> = {}): Promise<OpenClawEnv> {
    const oc = { install, home: join(tmp, `${name}-home`), stateDir: join(tmp, `${name}-state`) };
    const config = {
      models: {
        providers: {
          turnstream: {
            baseUrl: `${url}/v1`,
            apiKey: 'unused',
            api: 'openai-completions',
            models: [{ id: model, name: model, reasoning: false, input: ['text'], contextWindow: 131072, maxTokens: 8 }],
          },
        },
      },
      agents: { defaults: { model: { primary: `turnstream/${model}` }, workspace: join(tmp, `${name}-workspace`) } },
      ...extra,
    };
    await mkdir(oc.home, { recursive: true });
    await mkdir(oc.stateDir, { recursive: true });
    await writeFile(join(oc.stateDir, 'openclaw.json'), JSON.stringify(config, null, 2));
    return oc;
  }

  const turnsOf = async (pred: (t: Turn) => boolean): Promise<Turn[]> =>
    (await readAll(f, 'turns')).filter(pred).sort((a, b) => a.requestedAt - b.requestedAt);
  /** OpenClaw's session id is in the first user message's runtime line: that conversation's turns. */
  const conversation = (id: string) => (t: Turn) =>
    t.requestMessages.some((m) => m.role === 'user' && (m.content ?? '').includes(`sessionId=${id}`));

  it('without a plugin: one turn per request, all main turns of one INFERRED session, the answer paired with the correction', async () => {
    const oc = await openclawEnv('plain');
    await openclaw(oc, ['agent', '--local', '--session-id', 'oc-plain', '--message', 'hello there', '--json']);
    await openclaw(oc, ['agent', '--local', '--session-id', 'oc-plain', '--message', 'no, that is wrong', '--json']);

    const sent = chatRequests.filter((b) =>
      (b.messages ?? []).some((m) => m.role === 'user' && typeof m.content === 'string' && m.content.includes('sessionId=oc-plain')),
    ).length;
    assert.ok(sent >= 2, `OpenClaw sent ${sent} chat requests`);
    await waitFor('a turn per request', async () => (await turnsOf(conversation('oc-plain'))).length >= sent);
    const turns = await turnsOf(conversation('oc-plain'));
    assert.equal(turns.length, sent, 'one turn per request OpenClaw sent (it retries a slow one now and then)');
    assert.equal(new Set(turns.map((t) => t.turnId)).size, turns.length, 'no turn doubled');
    assert.ok(turns[0].requestMessages.at(-1)!.content!.includes(INTERNAL_CONTEXT), 'OpenClaw did append its internal context');
    assert.ok(
      turns.every((t) => t.turnType === 'MAIN'),
      'all main turns',
    );
    assert.deepEqual(
      turns.map((t) => t.sessionSource),
      ['GENERATED', ...turns.slice(1).map(() => 'INFERRED')],
    );
    assert.ok(
      turns.every((t) => t.sessionId === turns[0].sessionId),
      'one session',
    );

    // The turn answered just before the correction is the one the correction follows.
    const correction = turns.findIndex((t) =>
      t.requestMessages.some((m) => m.role === 'user' && /no, that is wrong/.test(m.content ?? '')),
    );
    assert.ok(correction >= 1, 'the correction is a later turn');
    const answered = turns[correction - 1];
    await waitFor('the pair of the answered turn', async () => (await readAll(f, 'pairs')).some((p) => p.pairId === answered.turnId));
    const pair = (await readAll(f, 'pairs')).find((p) => p.pairId === answered.turnId)!;
    assert.equal(pair.sessionId, turns[0].sessionId);
    assert.equal(pair.historyVerified, true, "the correction's history holds the answer");
    assert.equal(pair.nextState.length, 1);
    assert.equal(pair.nextState[0].role, 'USER');
    assert.match(pair.nextState[0].content, /no, that is wrong$/);
    assert.ok(!pair.nextState[0].content.includes(INTERNAL_CONTEXT));
  });

  it('with the plugin: turns carry OpenClaw’s session id, and a heartbeat run of the session is a SIDE turn', async () => {
    const port = await freePort();
    const oc = await openclawEnv('plugin', { gateway: { mode: 'local', port, bind: 'loopback', auth: { mode: 'none' } } });
    const { stdout } = await execFileP(
      process.execPath,
      ['--import', 'tsx', 'bin/turnstream.js', 'openclaw', 'install-plugin', '--state', oc.stateDir, '--gateway', url, '--json'],
      {
        cwd: REPO_ROOT,
      },
    );
    const installed = JSON.parse(stdout) as { pluginDir: string; providerAdded: boolean };
    assert.equal(installed.providerAdded, false, 'the provider configured already is kept');
    const config = JSON.parse(await readFile(join(oc.stateDir, 'openclaw.json'), 'utf8'));
    assert.equal(config.models.providers.turnstream.models[0].maxTokens, 8);
    assert.equal(config.plugins.entries['rl-training-headers'].enabled, true);

    const ocGateway = await startOpenClawGateway(oc);
    try {
      await openclaw(oc, ['agent', '--session-id', 'oc-plugin', '--message', 'hello there', '--json']);
      await openclaw(oc, ['agent', '--session-id', 'oc-plugin', '--message', 'thanks, perfect', '--json']);
      // A system event with --mode now wakes the session's heartbeat run at once.
      await openclaw(oc, [
        'system',
        'event',
        '--text',
        'Check the inbox.',
        '--mode',
        'now',
        '--session-key',
        'agent:main:explicit:oc-plugin',
        '--port',
        String(port),
      ]);
      await waitFor('two main turns and a heartbeat', async () => (await turnsOf((t) => t.sessionId === 'oc-plugin')).length >= 3, 180_000);
    } finally {
      await ocGateway.stop();
    }
    const turns = await turnsOf((t) => t.sessionId === 'oc-plugin');
    assert.equal(turns.length, 3);
    assert.deepEqual(
      turns.map((t) => [t.sessionSource, t.turnType]),
      [
        ['HEADER', 'MAIN'],
        ['HEADER', 'MAIN'],
        ['HEADER', 'SIDE'],
      ],
    );
    await waitFor('the pair of turn 1', async () => (await readAll(f, 'pairs')).some((p) => p.pairId === turns[0].turnId));
    const pairs = (await readAll(f, 'pairs')).filter((p) => p.sessionId === 'oc-plugin');
    assert.deepEqual(
      pairs.map((p) => p.pairId),
      [turns[0].turnId],
      'the side turn is never paired',
    );
    assert.match(pairs[0].nextState[0].content, /thanks, perfect$/);
  });
});

const execFileP = promisify(execFile);

async function freePort(): Promise<number> {
  const { createServer } = await import('node:net');
  return new Promise((ok, fail) => {
    const s = createServer();
    s.once('error', fail);
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as { port: number }).port;
      s.close(() => ok(port));
    });
  });
}
