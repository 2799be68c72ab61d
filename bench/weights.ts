// `turnstream bench weights [--json] [--model smollm2-135m] [--rounds 3] [--rank 8] [--chunk-kib 256]`:
// a new weight version, from its commit on the weights topic to the first turn it serves, on a
// gateway with a home of its own that fetches it through Kafka (TURNSTREAM_WEIGHTS_TRANSPORT=kafka),
// against a gateway sharing the trainer's weight store (the file transport) in the same run.
//
// Both gateways serve the real model on llama.cpp (the same GGUF file: each host has its base),
// each follows a topic family of its own, and the trainer side publishes a LoRA adapter of the
// trainer's default shape (rank `--rank` on q, k, v, o of every layer) as the learner does: the
// file into the trainer's store, then (Kafka) its pieces and the WeightVersion in one
// transaction. The two alternate round by round (which goes first too); a warm-up round of each is
// not counted. The time is from the commit's return to the end of a one-request turn that answers
// with X-Policy-Version N; the fetch alone (a fresh store, the same version) is reported beside it.
import { mkdir, stat } from 'node:fs/promises';
import { join } from 'node:path';
import * as tf from '@tensorflow/tfjs';
import { createLogger } from '../core/index.ts';
import { createGateway, type Gateway } from '../gateway/index.ts';
import {
  AdapterStore,
  DEFAULT_LORA,
  llamaConfigOf,
  LoraAdapter,
  openGguf,
  resolveModel,
  selectBackend,
  WeightTransport,
  writeLoraAdapter,
  writeTinyModel,
  untrainedLoraVersion,
} from '../policy/index.ts';
import { Transactions } from '../streams/index.ts';
import type { BenchArgs } from './options.ts';
import { resolveOptions, type BenchOptions, type BenchResult } from './options.ts';
import { benchFamily, benchTempDir, median, type BenchFamily } from './support.ts';

export const description =
  "a new weight version to the first turn it serves: a gateway on its own home fetching it through Kafka, against one sharing the trainer's weight store (file transport), interleaved";

export const options: BenchOptions = {
  model: { type: 'string', default: 'smollm2-135m', help: 'model spec (a catalog name, a .gguf path, hf:…), or tiny for a smoke run' },
  rounds: { default: '3', help: 'measured versions per transport (after one warm-up each)' },
  rank: { default: String(DEFAULT_LORA.rank), help: "LoRA rank of the published adapters (targets q,k,v,o: the trainer's default shape)" },
  'chunk-kib': { default: '256', help: 'KiB of a file per record of the weight-blobs topic' },
};

type Transport = 'file' | 'kafka';

interface Side {
  transport: Transport;
  family: BenchFamily;
  gw: Gateway;
  url: string;
  modelId: string;
  tx: Transactions;
  next: number;
}

const round3 = (x: number): number => Math.round(x * 1000) / 1000;

export async function run(args: BenchArgs): Promise<BenchResult & Record<string, unknown>> {
  const o = resolveOptions(options, args.options);
  const rounds = Number(o.rounds);
  const rank = Number(o.rank);
  const chunkBytes = Number(o['chunk-kib']) * 1024;
  const tmp = await benchTempDir('weights');
  const sides: Side[] = [];
  try {
    await selectBackend('wasm');
    const base = await modelOf(args, o.model, tmp.dir);
    const trainerWeights = join(tmp.dir, 'trainer', 'weights');
    const file = await openGguf(base.path);
    const config = llamaConfigOf(file);
    const architecture = file.architecture;
    await file.close();
    for (const transport of ['file', 'kafka'] as const) {
      const family = await benchFamily(args.config, `weights-${transport}`, 3, ['weights', 'weightBlobs']);
      const modelId = `bench-${transport}`;
      // The file side shares the trainer's home; the Kafka side has one of its own.
      const home = transport === 'file' ? join(tmp.dir, 'trainer') : join(tmp.dir, 'gateway-kafka');
      await mkdir(home, { recursive: true });
      const gw = createGateway({
        port: 0,
        home,
        logger: createLogger(`bench-gateway-${transport}`, 'warn'),
        kafka: {
          brokers: family.clientOptions.brokers,
          registryUrl: family.endpoints.registryUrl,
          security: family.security,
          naming: { prefix: family.prefix },
        },
        shareSessions: false,
        capture: false,
        llama: {
          model: { name: base.name, modelId, path: base.path, sha256: base.sha256 },
          weightsDir: join(home, 'weights'),
          contextSize: 512,
          parallel: 1,
          kvCache: false,
        },
      });
      const tx = new Transactions({
        kafka: family.kafka,
        transactionalId: `${family.prefix}trainer`,
        logger: createLogger('bench-trainer', 'warn'),
      });
      sides.push({ transport, family, gw, url: '', modelId, tx, next: 1 });
      args.progress(`bench weights: gateway (${transport}) on ${base.name} …`);
      sides[sides.length - 1].url = await gw.start();
      await tx.connect();
    }
    const trainer = new Map(
      sides.map((s) => [
        s.transport,
        new WeightTransport({
          weightsDir: trainerWeights,
          chunkBytes,
          connection: async () => ({ kafka: s.family.kafka, codecs: s.family.codecs }),
        }),
      ]),
    );

    const perRound: Array<{ round: number; transport: Transport; version: number; s: number; fetch_s?: number }> = [];
    let adapterBytes = 0;
    let pieces = 0;
    for (let round = 0; round <= rounds; round++) {
      for (const side of round % 2 ? [...sides].reverse() : sides) {
        const version = side.next++;
        const t = trainer.get(side.transport)!;
        const written = await writeAdapter(trainerWeights, side.modelId, version, {
          architecture,
          config,
          rank,
          base,
          seed: round * 10 + version,
        });
        adapterBytes = written.bytes;
        const createdAt = Date.now();
        const sent =
          side.transport === 'kafka' ? await t.publication(side.modelId, version, written.dir) : { uri: written.dir, outputs: [] };
        if (side.transport === 'kafka') pieces = sent.outputs.length;
        const wv = untrainedLoraVersion({ modelId: side.modelId, version, uri: sent.uri, sha256: written.sha256, base }, createdAt);
        const weights = side.family.codecs.of('weights');
        await side.tx.commit(() => ({
          outputs: [...sent.outputs, { topic: weights.topic, key: side.modelId, value: weights.encodeNow(wv) }],
        }));
        const t0 = performance.now();
        while (side.gw.llama!.version !== version) {
          if (performance.now() - t0 > 120_000) throw new Error(`the ${side.transport} gateway did not swap in v${version} within 120 s`);
          await new Promise((r) => setTimeout(r, 5));
        }
        const served = await turn(side.url, side.modelId);
        const s = (performance.now() - t0) / 1000;
        if (served !== String(version)) throw new Error(`the ${side.transport} gateway answered with version ${served}, not ${version}`);
        const entry: (typeof perRound)[number] = { round, transport: side.transport, version, s: round3(s) };
        if (side.transport === 'kafka') {
          // The fetch alone, into a store that lacks it.
          const f0 = performance.now();
          await new WeightTransport({
            weightsDir: join(tmp.dir, `fetch-${version}`),
            connection: async () => ({ kafka: side.family.kafka, codecs: side.family.codecs }),
          }).localize(wv);
          entry.fetch_s = round3((performance.now() - f0) / 1000);
        }
        perRound.push(entry);
        args.progress(`  round ${round}${round === 0 ? ' (warm-up)' : ''}: ${side.transport} v${version} served after ${s.toFixed(3)} s`);
      }
    }
    const measured = (tr: Transport) => perRound.filter((r) => r.round > 0 && r.transport === tr);
    const fileS = round3(median(measured('file').map((r) => r.s)));
    const kafkaS = round3(median(measured('kafka').map((r) => r.s)));
    return {
      model: base.name,
      adapter_bytes: adapterBytes,
      lora: { rank, targets: DEFAULT_LORA.targets },
      chunk_bytes: chunkBytes,
      pieces,
      /** Commit → first turn served by the new version, median of the measured rounds. */
      kafka_s: kafkaS,
      file_s: fileS,
      /** The fetch alone (pieces read, checked, written into a fresh store), median. */
      fetch_s: round3(median(measured('kafka').map((r) => r.fetch_s!))),
      per_round: perRound,
      baseline:
        "the same adapter to a gateway sharing the trainer's weight store (file transport), same model and settings, interleaved in the same run",
      ratio: round3(kafkaS / fileS),
    };
  } finally {
    for (const s of sides) {
      await s.gw.stop().catch(() => undefined);
      await s.tx.disconnect();
      await s.family.cleanup().catch(() => undefined);
    }
    await tmp.remove();
  }
}

/** The base: a catalog model (or path, hf:…), or a tiny GGUF written for a smoke run. */
async function modelOf(args: BenchArgs, spec: string, dir: string): Promise<{ name: string; path: string; sha256: string }> {
  if (spec === 'tiny') {
    const tiny = await writeTinyModel(join(dir, 'tiny.gguf'), { architecture: 'llama', contextLength: 512 });
    return { name: 'tiny', path: tiny.path, sha256: tiny.sha256 };
  }
  const m = await resolveModel(spec, {
    cacheDir: args.config.model.cacheDir,
    hfEndpoint: args.config.model.hfEndpoint,
    hfToken: args.config.model.hfToken,
  });
  if (!m.path || !m.sha256) throw new Error('bench weights needs a GGUF model, not builtin');
  return { name: m.name, path: m.path, sha256: m.sha256 };
}

/** A LoRA adapter of the trainer's default shape (small random B, so it is not a no-op) as version `version` of `modelId`. */
async function writeAdapter(
  weightsDir: string,
  modelId: string,
  version: number,
  o: { architecture: string; config: ReturnType<typeof llamaConfigOf>; rank: number; base: { name: string; sha256: string }; seed: number },
): Promise<{ dir: string; sha256: string; bytes: number }> {
  const lora = LoraAdapter.init(o.config, { ...DEFAULT_LORA, rank: o.rank, alpha: 2 * o.rank }, o.seed);
  try {
    for (const x of lora.variables) x.assign(tf.randomNormal(x.shape, 0, 0.01, 'float32', o.seed));
    const pairs = await lora.toPairs();
    let bytes = 0;
    const ref = await new AdapterStore(weightsDir).write(
      { modelId, version, parentVersion: version - 1, base: { name: o.base.name, sha256: o.base.sha256 }, lora: lora.config },
      async (path) => {
        await writeLoraAdapter(path, { architecture: o.architecture, alpha: lora.config.alpha, pairs, name: `${modelId} v${version}` });
        bytes = (await stat(path)).size;
      },
    );
    return { dir: ref.uri, sha256: ref.manifest.sha256, bytes };
  } finally {
    lora.dispose();
  }
}

/** One turn; the X-Policy-Version it was served with. */
async function turn(url: string, model: string): Promise<string | null> {
  const res = await fetch(`${url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ model, temperature: 0, max_tokens: 8, messages: [{ role: 'user', content: 'Hello!' }] }),
  });
  await res.arrayBuffer();
  if (res.status !== 200) throw new Error(`a turn failed with HTTP ${res.status}`);
  return res.headers.get('x-policy-version');
}
