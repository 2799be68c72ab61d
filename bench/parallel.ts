// `turnstream bench parallel [--json] [--model smollm2-135m] [--parallel 8] [--prompts 32] [--max-tokens 48] [--threads N]`:
// generations side by side on the llama engine, through the gateway (built as `turnstream gateway`'s,
// in process, real HTTP). The same greedy prompts are answered with the default layout, a
// llama.cpp context per generation (`LLAMA_BATCHING=separate`), and with the baseline, one
// context whose sequences are decoded as one batch (`shared`); each prompt is also answered
// alone, one at a time, which is what both should give. Reports tokens/s of each layout and
// how many of its answers equal the answers given alone.
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { createLogger } from '../core/index.ts';
import type { LlamaBatching } from '../gateway/index.ts';
import { gatewayService, ownGateway } from '../stack/index.ts';
import type { BenchArgs, BenchOptions, BenchResult } from './options.ts';
import { resolveOptions } from './options.ts';
import { benchModelFile, type BenchModelFile } from './model-file.ts';
import { benchTempDir } from './support.ts';

export const description =
  'generations side by side on the llama engine: a context per generation (the default) against one context decoding them as one batch, both against each prompt answered alone (tokens/s, equal answers)';

export const options: BenchOptions = {
  model: { type: 'string', default: 'smollm2-135m', help: 'model spec (a catalog name, a .gguf path, hf:…), or tiny for a smoke run' },
  parallel: { default: '8', help: 'generations at once (LLAMA_PARALLEL)' },
  prompts: { default: '32', help: 'prompts, each asked by a caller of its own' },
  'max-tokens': { default: '48', help: 'most tokens of each (greedy) answer' },
  threads: {
    default: String(Math.max(1, Math.floor(availableParallelism() / 2))),
    help: 'llama.cpp CPU threads, all generations together (LLAMA_THREADS)',
  },
};

interface Answer {
  content: string;
  tokens: number;
}

/** One layout's run: wall time, tokens and answers. */
interface Measured {
  seconds: number;
  tokens: number;
  answers: Answer[];
}

const CONTEXT = 1024;

export async function run(args: BenchArgs): Promise<BenchResult & Record<string, unknown>> {
  const o = resolveOptions(options, args.options);
  const parallel = Number(o.parallel);
  const n = Number(o.prompts);
  const maxTokens = Number(o['max-tokens']);
  const threads = Number(o.threads);
  const tmp = await benchTempDir('parallel');
  try {
    const model = await benchModelFile(args.config, o.model, CONTEXT, tmp.dir);
    const prompts = Array.from(
      { length: n },
      (_, i) =>
        `Question ${i}: what is ${i} plus ${i * 3}? Then name a fruit starting with the letter ${String.fromCharCode(65 + (i % 26))}.`,
    );
    const layout = async (batching: LlamaBatching, at: number): Promise<Measured> => {
      args.progress(`bench parallel: ${n} prompts, ${at} at a time, ${batching} …`);
      return measure(args, model, { batching, parallel: at, threads, maxTokens, dir: join(tmp.dir, `${batching}-${at}`) }, prompts);
    };
    const alone = await layout('separate', 1);
    const separate = await layout('separate', parallel);
    const shared = await layout('shared', parallel);
    const same = (m: Measured) => m.answers.filter((a, i) => a.content === alone.answers[i].content).length;
    const rate = (m: Measured) => Number((m.tokens / m.seconds).toFixed(1));
    return {
      model: model.name,
      parallel,
      prompts: n,
      threads,
      tokens_per_s: { separate: rate(separate), shared: rate(shared), alone: rate(alone) },
      seconds: { separate: round3(separate.seconds), shared: round3(shared.seconds), alone: round3(alone.seconds) },
      same_as_alone: { separate: same(separate), shared: same(shared) },
      baseline: `one llama.cpp context of ${parallel} sequences decoded as one batch (LLAMA_BATCHING=shared), same prompts, same run`,
      ratio: Number((rate(separate) / rate(shared)).toFixed(3)),
    };
  } finally {
    await tmp.remove();
  }
}

async function measure(
  args: BenchArgs,
  model: BenchModelFile,
  s: { batching: LlamaBatching; parallel: number; threads: number; maxTokens: number; dir: string },
  prompts: string[],
): Promise<Measured> {
  const served = { kind: 'llama' as const, ...model, modelId: model.name, systemPrompt: undefined };
  const gw = gatewayService(args.config, served, {
    ...ownGateway(join(s.dir, 'gateway'), createLogger('bench-parallel', 'warn')),
    kafka: undefined,
    admission: { maxConcurrent: s.parallel },
    llama: {
      weightsDir: join(s.dir, 'weights'),
      contextSize: CONTEXT,
      threads: s.threads,
      parallel: s.parallel,
      batching: s.batching,
      kvCache: false,
    },
  });
  const url = await gw.start();
  try {
    const ask = async (i: number): Promise<Answer> => {
      const res = await fetch(`${url}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          messages: [
            { role: 'system', content: 'You are a helpful assistant. Answer briefly.' },
            { role: 'user', content: prompts[i] },
          ],
          temperature: 0,
          max_tokens: s.maxTokens,
          user: `bench-${i}`,
        }),
      });
      const body = (await res.json()) as { choices?: Array<{ message: { content: string } }>; usage?: { completion_tokens: number } };
      if (!res.ok || !body.choices) throw new Error(`bench parallel: the gateway answered ${res.status}: ${JSON.stringify(body)}`);
      return { content: body.choices[0].message.content, tokens: body.usage?.completion_tokens ?? 0 };
    };
    const answers: Answer[] = new Array<Answer>(prompts.length);
    let next = 0;
    const t0 = performance.now();
    await Promise.all(
      Array.from({ length: s.parallel }, async () => {
        for (let i = next++; i < prompts.length; i = next++) answers[i] = await ask(i);
      }),
    );
    const seconds = (performance.now() - t0) / 1000;
    return { seconds, tokens: answers.reduce((t, a) => t + a.tokens, 0), answers };
  } finally {
    await gw.stop();
  }
}

const round3 = (x: number): number => Number(x.toFixed(3));
