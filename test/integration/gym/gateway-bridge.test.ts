/**
 * The sandbox's one way out, as OpenClaw uses it: from the sandbox's own 127.0.0.1 through the
 * forwarder and the bridge's unix socket to the gateway's /v1 routes (here a fake endpoint), with
 * the rollout's headers, metadata and sampling added, calls past max_turns refused, turn ids
 * kept; the gateway's port itself stays out of reach, and so does every other route.
 */
import assert from 'node:assert/strict';
import { join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { FORWARDER_SOURCE } from '../../../gym/agent/bridge-forwarder.ts';
import { replyFromStream, startGatewayBridge, type GatewayBridge } from '../../../gym/agent/gateway-bridge.ts';
import { createSandbox, type Sandbox } from '../../../gym/index.ts';
import { startFakeOpenAI, type FakeOpenAI } from './fake-openai.ts';

/** A client inside the sandbox: POST a body to a URL, print the status and the body. */
const CLIENT = `
import json, sys, urllib.request, urllib.error
url, body = sys.argv[1], sys.argv[2]
req = urllib.request.Request(url, data=body.encode(), headers={"content-type": "application/json", "authorization": "Bearer inside"}, method="POST" if body else "GET")
try:
    with urllib.request.urlopen(req, timeout=5) as r:
        print(r.status, r.read().decode())
except urllib.error.HTTPError as e:
    print(e.code, e.read().decode())
except Exception as e:
    print("unreachable", type(e).__name__)
`;

describe('the gateway bridge', { timeout: 120_000 }, () => {
  let fake: FakeOpenAI;
  let sandbox: Sandbox;
  let bridge: GatewayBridge;
  const port = 18080;

  before(async () => {
    fake = await startFakeOpenAI();
    sandbox = await createSandbox();
    bridge = await startGatewayBridge({
      socketPath: join(sandbox.hostWorkspace, '.gw.sock'),
      gateway: fake.url,
      headers: { 'X-Session-Id': 'bridged-session', 'X-Turn-Type': 'main', Authorization: 'Bearer outside' },
      metadata: { gym_task: 'bridge', gym_group: 'g', gym_rollout: '1' },
      sampling: { temperature: 0.7, seed: 40, maxTokens: 64 },
      maxCalls: 2,
    });
  });
  after(async () => {
    await bridge?.close();
    await sandbox?.dispose();
    await fake?.close();
  });

  /**
   * Runs the forwarder and then the client inside the sandbox; prints the client's lines. The
   * sandbox's /tmp outlives one command, so the last call's ready file goes first: else the client
   * could start before this call's forwarder listens.
   */
  const inside = (url: string, body: string) =>
    sandbox.sh(
      `rm -f /tmp/ready; node -e "$FWD" </dev/null & i=0; while [ ! -e /tmp/ready ] && [ $i -lt 600 ]; do i=$((i+1)); sleep 0.05; done; python3 -c "$CLIENT" "$URL" "$BODY"`,
      {
        env: {
          FWD: FORWARDER_SOURCE,
          TS_FWD_PORT: String(port),
          TS_FWD_SOCKET: '/workspace/.gw.sock',
          TS_FWD_READY: '/tmp/ready',
          CLIENT,
          URL: url,
          BODY: body,
        },
      },
    );

  it('a chat completion from the sandbox’s 127.0.0.1 reaches the gateway with the rollout’s headers, metadata and sampling', async () => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'hi' }], temperature: 1.5, max_completion_tokens: 999 });
    const r = await inside(`http://127.0.0.1:${port}/v1/chat/completions`, body);
    assert.match(r.stdout, /^200 \{/, r.stderr);
    const [req] = fake.requests('bridged-session');
    assert.equal(req.headers['x-turn-type'], 'main');
    assert.equal(req.headers.authorization, 'Bearer outside', 'the key is added outside; the one from inside is dropped');
    assert.deepEqual(req.body.metadata, { gym_task: 'bridge', gym_group: 'g', gym_rollout: '1' });
    assert.equal(req.body.temperature, 0.7);
    assert.equal(req.body.seed, 40);
    assert.equal(req.body.max_tokens, 64);
    assert.equal(req.body.max_completion_tokens, undefined);
    assert.equal(bridge.calls.length, 1);
    assert.match(bridge.calls[0].turnId, /^turn-\d+$/);
    assert.deepEqual(bridge.calls[0].reply, { role: 'assistant', content: 'Done.' });
    assert.deepEqual(bridge.calls[0].messages, [{ role: 'user', content: 'hi' }]);
  });

  it('only the /v1 routes: anything else is refused by the bridge, and the gateway’s own port is out of reach', async () => {
    const other = await inside(`http://127.0.0.1:${port}/metrics`, '');
    assert.match(other.stdout, /^404 .*only the gateway’s \/v1 routes/);
    const direct = await inside(fake.url.replace('/v1', '/v1/models'), '');
    assert.match(direct.stdout, /^unreachable/, 'no network in the sandbox');
  });

  it('calls past max_turns are answered 400 without reaching the gateway', async () => {
    const body = JSON.stringify({ model: 'm', messages: [{ role: 'user', content: 'again' }] });
    assert.match((await inside(`http://127.0.0.1:${port}/v1/chat/completions`, body)).stdout, /^200 /);
    const third = await inside(`http://127.0.0.1:${port}/v1/chat/completions`, body);
    assert.match(third.stdout, /^400 .*model calls \(max_turns\) are used up/);
    assert.equal(fake.requests('bridged-session').length, 2);
    assert.equal(bridge.refused, 1);
    assert.equal(fake.requests('bridged-session')[1].body.seed, 41, 'seed + k');
  });

  it('puts a streamed reply back together from its chunks, tool calls included', () => {
    const chunk = (delta: unknown) => `data: ${JSON.stringify({ choices: [{ index: 0, delta }] })}\n\n`;
    const sse =
      chunk({ role: 'assistant', content: '' }) +
      chunk({ content: 'Hel' }) +
      chunk({ content: 'lo' }) +
      chunk({ tool_calls: [{ index: 0, id: 'c1', type: 'function', function: { name: 'ba', arguments: '{"command":' } }] }) +
      chunk({ tool_calls: [{ index: 0, function: { name: 'sh', arguments: '"ls"}' } }] }) +
      'data: [DONE]\n\n';
    assert.deepEqual(replyFromStream(sse), {
      role: 'assistant',
      content: 'Hello',
      tool_calls: [{ id: 'c1', type: 'function', function: { name: 'bash', arguments: '{"command":"ls"}' } }],
    });
  });
});
