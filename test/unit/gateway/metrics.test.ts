import assert from 'node:assert/strict';
import { test } from 'node:test';
import { interTokenSeconds, type Choice } from '../../../gateway/call-runner.ts';
import type { EngineResult } from '../../../gateway/engine.ts';
import { GatewayMetrics } from '../../../gateway/metrics.ts';

/** `{ le: cumulative count }` of one histogram series in the Prometheus text. */
function buckets(text: string, name: string): Map<string, number> {
  const out = new Map<string, number>();
  for (const m of text.matchAll(new RegExp(`^${name}_bucket\\{[^}]*le="([^"]+)"[^}]*\\} (\\d+)$`, 'gm'))) out.set(m[1], Number(m[2]));
  return out;
}

test('time to first token: an 83 s prompt (an 8k prompt on CPU) lands in a bucket, not +Inf; buckets reach 300 s', async () => {
  const metrics = new GatewayMetrics('gw-ttft');
  for (const s of [0.2, 8, 83, 250]) metrics.timeToFirstToken.observe({ engine: 'llama' }, s);
  const b = buckets((await metrics.render()).body, 'turnstream_gateway_time_to_first_token_seconds');
  assert.equal(b.get('10'), 2, '0.2 s and 8 s');
  assert.equal(b.get('60'), 2);
  assert.equal(b.get('120'), 3, '83 s within 120 s');
  assert.equal(b.get('180'), 3);
  assert.equal(b.get('300'), 4, '250 s within the last finite bucket');
  assert.equal(b.get('+Inf'), 4);
  const finite = [...b.keys()].filter((k) => k !== '+Inf').map(Number);
  assert.equal(Math.max(...finite), 300);
});

test('request duration: a generation of several minutes is told apart from one of two (buckets to 600 s)', async () => {
  const metrics = new GatewayMetrics('gw-latency');
  for (const s of [100, 200, 500]) metrics.latency.observe({ route: 'chat', stream: 'false' }, s);
  const b = buckets((await metrics.render()).body, 'turnstream_gateway_request_duration_seconds');
  assert.deepEqual(
    ['120', '300', '600', '+Inf'].map((le) => b.get(le)),
    [1, 2, 3, 3],
  );
});

test('inter-token latency of a choice: its deltas’ span over its tokens after the first; none under two tokens or untimed', () => {
  const choice = (completionTokens: number, firstDeltaAt?: number, lastDeltaAt?: number): Choice =>
    ({ result: { completionTokens } as EngineResult, firstDeltaAt, lastDeltaAt }) as Choice;
  assert.equal(interTokenSeconds(choice(101, 1_000, 6_000)), 0.05, '100 gaps over 5 s');
  assert.equal(interTokenSeconds(choice(2, 1_000, 1_030)), 0.03);
  assert.equal(interTokenSeconds(choice(1, 1_000, 1_000)), null, 'one token: no gap');
  assert.equal(interTokenSeconds(choice(5)), null, 'no delta timed');
  assert.equal(interTokenSeconds({ firstDeltaAt: 1, lastDeltaAt: 2 } as Choice), null, 'no result');
});

test('inter-token latency buckets: 2 ms (a GPU) to 10 s (a loaded CPU) fall in finite buckets', async () => {
  const metrics = new GatewayMetrics('gw-itl');
  for (const s of [0.002, 0.04, 0.3, 9]) metrics.interTokenLatency.observe({ engine: 'llama' }, s);
  const b = buckets((await metrics.render()).body, 'turnstream_gateway_inter_token_latency_seconds');
  assert.deepEqual(
    ['0.0025', '0.05', '0.3', '10', '+Inf'].map((le) => b.get(le)),
    [1, 2, 3, 4, 4],
  );
});
