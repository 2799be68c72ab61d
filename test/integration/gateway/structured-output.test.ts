/**
 * Structured output on the real default model (SmolLM2-135M-Instruct on llama.cpp) through the
 * official `openai` client: 100 replies under `response_format: json_schema` (strict), asked as
 * 25 calls of `n: 4` on parallel sequences, every one of them JSON that validates against the
 * schema (ajv, strict). The schema is modest and `max_tokens` bounded so that the run stays
 * within minutes on two cores.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { after, before, test } from 'node:test';
import { Ajv } from 'ajv';
import OpenAI from 'openai';
import { loadConfig } from '../../../cli/config.ts';
import type { Gateway } from '../../../gateway/index.ts';
import { resolveModel } from '../../../policy/index.ts';
import { createLlamaGateway } from '../../support/llama-gateway.ts';

const schema = {
  type: 'object',
  properties: {
    country: { type: 'string', maxLength: 24 },
    is_capital: { type: 'boolean' },
    continent: { type: 'string', enum: ['Africa', 'America', 'Asia', 'Europe', 'Oceania'] },
  },
  required: ['country', 'is_capital', 'continent'],
  additionalProperties: false,
};
const CITIES = ['Paris', 'Tokyo', 'Lagos', 'Lima', 'Sydney', 'Toronto', 'Cairo', 'Oslo', 'Delhi', 'Quito', 'Nairobi', 'Berlin', 'Seoul'];
const CALLS = 25;
const N = 4;

let dir = '';
let gw: Gateway;
let client: OpenAI;

before(async () => {
  const model = await resolveModel('smollm2-135m', { cacheDir: loadConfig().model.cacheDir });
  dir = await mkdtemp(join(tmpdir(), 'structured-'));
  gw = createLlamaGateway(dir, { name: 'smollm2-135m', path: model.path, sha256: model.sha256 }, { parallel: N, contextSize: 512 });
  client = new OpenAI({ baseURL: `${await gw.start()}/v1`, apiKey: 'unused', maxRetries: 0 });
});

after(async () => {
  await gw?.stop();
  await rm(dir, { recursive: true, force: true });
});

test(`response_format json_schema on SmolLM2: ${CALLS * N} of ${CALLS * N} replies validate against the schema`, async (t) => {
  const validate = new Ajv({ strict: true }).compile(schema);
  const started = Date.now();
  let valid = 0;
  let tokens = 0;
  const failures: string[] = [];
  for (let i = 0; i < CALLS; i++) {
    const city = CITIES[i % CITIES.length];
    const res = await client.chat.completions.create({
      model: 'smollm2-135m',
      messages: [{ role: 'user', content: `Give the country and continent of ${city}, and whether it is the capital, as JSON.` }],
      response_format: { type: 'json_schema', json_schema: { name: 'city', schema, strict: true } },
      max_tokens: 64,
      temperature: 0.7,
      seed: i * N,
      n: N,
    });
    assert.equal(res.choices.length, N);
    tokens += res.usage!.completion_tokens;
    for (const c of res.choices) {
      const text = c.message.content ?? '';
      let ok = false;
      try {
        ok = c.finish_reason === 'stop' && validate(JSON.parse(text));
      } catch {
        ok = false;
      }
      if (ok) valid++;
      else failures.push(`${city} #${c.index} (${c.finish_reason}): ${text} ${JSON.stringify(validate.errors)}`);
    }
  }
  const seconds = (Date.now() - started) / 1000;
  t.diagnostic(
    `${valid}/${CALLS * N} valid; ${tokens} completion tokens in ${seconds.toFixed(1)} s (${(tokens / seconds).toFixed(1)} tokens/s)`,
  );
  assert.deepEqual(failures, []);
  assert.equal(valid, CALLS * N);
});
