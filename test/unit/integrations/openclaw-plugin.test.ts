/**
 * The OpenClaw plugin's logic (its registration, driven by a recording stand-in for OpenClaw's
 * plugin API) and its installer. The real OpenClaw runs it in test/e2e/openclaw.test.ts.
 */
import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, it } from 'node:test';
import register, {
  type PluginApi,
  type RunContext,
  type TransportTurnContext,
} from '../../../integrations/openclaw/rl-training-headers/index.ts';
import { DEFAULT_TIMEOUT_SECONDS, installPlugin, PLUGIN_ID, withPlugin } from '../../../integrations/openclaw/index.ts';

function loadPlugin(pluginConfig?: unknown) {
  const hooks = new Map<string, (event: unknown, ctx: RunContext) => unknown>();
  const providers = new Map<string, (ctx: TransportTurnContext) => { headers: Record<string, string> }>();
  const api: PluginApi = {
    pluginConfig,
    on: (name, handler) => void hooks.set(name, handler),
    registerProvider: (p) => void providers.set(p.id, p.resolveTransportTurnState),
  };
  register(api);
  return {
    providers,
    start: (ctx: RunContext) => hooks.get('before_prompt_build')!({ prompt: 'x' }, ctx),
    end: (ctx: RunContext) => hooks.get('agent_end')!({}, ctx),
    headers: (sessionId?: string, provider = 'turnstream') => providers.get(provider)!({ provider, sessionId }).headers,
  };
}

describe('rl-training-headers', () => {
  it('a user run is main, heartbeat / memory / cron runs are side, each with its session id', () => {
    const p = loadPlugin();
    assert.deepEqual([...p.providers.keys()], ['turnstream']);
    for (const [trigger, type] of [
      ['user', 'main'],
      ['heartbeat', 'side'],
      ['memory', 'side'],
      ['cron', 'side'],
      [undefined, 'main'],
    ] as const) {
      p.start({ runId: `r-${trigger}`, sessionId: `s-${trigger}`, trigger });
      assert.deepEqual(p.headers(`s-${trigger}`), { 'X-Session-Id': `s-${trigger}`, 'X-Turn-Type': type }, String(trigger));
    }
  });

  it('a run nested in another of the same session ends and the outer run is back; no run in progress is side', () => {
    const p = loadPlugin();
    p.start({ runId: 'user-run', sessionId: 's', trigger: 'user' });
    p.start({ runId: 'flush', sessionId: 's', trigger: 'memory' });
    assert.equal(p.headers('s')['X-Turn-Type'], 'side');
    p.end({ runId: 'flush', sessionId: 's' });
    assert.equal(p.headers('s')['X-Turn-Type'], 'main', 'the user run continues');
    p.end({ runId: 'user-run', sessionId: 's' });
    assert.deepEqual(p.headers('s'), { 'X-Session-Id': 's', 'X-Turn-Type': 'side' });
    assert.deepEqual(p.headers(undefined), { 'X-Turn-Type': 'side' }, 'no session: no session header');
  });

  it('header names and providers come from plugins.entries.rl-training-headers.config', () => {
    const p = loadPlugin({ sessionIdHeader: 'X-Conversation', turnTypeHeader: 'X-Kind', providers: ['ts-a', 'ts-b'] });
    assert.deepEqual([...p.providers.keys()], ['ts-a', 'ts-b']);
    p.start({ runId: 'r', sessionId: 's', trigger: 'heartbeat' });
    assert.deepEqual(p.headers('s', 'ts-b'), { 'X-Conversation': 's', 'X-Kind': 'side' });
  });
});

describe('turnstream openclaw install-plugin', () => {
  it('copies the plugin and enables it with conversation access; an existing allowlist gains it, none is created', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ts-openclaw-'));
    try {
      await writeFile(
        join(dir, 'openclaw.json'),
        JSON.stringify({ agents: { defaults: { model: { primary: 'x/y' } } }, plugins: { allow: ['other'] } }),
      );
      const gateway = { url: 'http://127.0.0.1:30000/', model: 'turnstream-tiny' };
      const first = await installPlugin({ stateDir: dir, gateway });
      assert.equal(first.providerAdded, true);
      for (const f of ['index.ts', 'openclaw.plugin.json', 'package.json']) await readFile(join(first.pluginDir, f));
      const manifest = JSON.parse(await readFile(join(first.pluginDir, 'openclaw.plugin.json'), 'utf8'));
      assert.equal(manifest.id, PLUGIN_ID);
      const config = JSON.parse(await readFile(join(dir, 'openclaw.json'), 'utf8'));
      assert.deepEqual(config.plugins.allow, ['other', PLUGIN_ID]);
      assert.deepEqual(config.plugins.entries[PLUGIN_ID], {
        enabled: true,
        hooks: { allowConversationAccess: true },
        config: { sessionIdHeader: 'X-Session-Id', turnTypeHeader: 'X-Turn-Type', providers: ['turnstream'] },
      });
      assert.equal(config.models.providers.turnstream.baseUrl, 'http://127.0.0.1:30000/v1');
      assert.equal(config.models.providers.turnstream.models[0].id, 'turnstream-tiny');
      // A request timeout that fits an agent's first turn on a CPU (OpenClaw's own default gives up at 300 s).
      assert.equal(config.models.providers.turnstream.timeoutSeconds, DEFAULT_TIMEOUT_SECONDS);
      assert.ok(DEFAULT_TIMEOUT_SECONDS >= 600);
      assert.equal(config.agents.defaults.model.primary, 'x/y', 'the rest of the config is kept');
      // Again: same config, the provider (now existing) untouched.
      const second = await installPlugin({ stateDir: dir, gateway: { ...gateway, model: 'other' } });
      assert.equal(second.providerAdded, false);
      assert.deepEqual(JSON.parse(await readFile(join(dir, 'openclaw.json'), 'utf8')), config);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
    const fresh = withPlugin({}, {}).config as { plugins: Record<string, unknown>; models?: unknown };
    assert.equal('allow' in fresh.plugins, false, 'no allowlist is created (it would block other plugins)');
    assert.equal(fresh.models, undefined, 'no provider without a gateway');
  });

  it('a config that is not plain JSON is an input error, and the file is left alone', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ts-openclaw-'));
    try {
      await writeFile(join(dir, 'openclaw.json'), '{ // json5\n models: {} }');
      await assert.rejects(installPlugin({ stateDir: dir }), { code: 'TS_ERR_INVALID_INPUT' });
      assert.equal(await readFile(join(dir, 'openclaw.json'), 'utf8'), '{ // json5\n models: {} }');
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
