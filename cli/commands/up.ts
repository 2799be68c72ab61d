/**
 * `turnstream up` (what `npm start` runs): the local stack plus every turnstream service, as
 * one supervised process tree. Prints where each listens and its health; Ctrl-C stops all.
 */
import type { Command } from 'commander';
import { fileURLToPath } from 'node:url';
import { join } from 'node:path';
import { stackDown, stackUpFor, type StackUpResult } from '../../infra/index.ts';
import { detectCudaDevice, ensureNativeTensorflow } from '../../policy/index.ts';
import { createEventCodecs, createKafka, ensureTopics, parseBrokers } from '../../streams/index.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';
import { servedModel } from '../served-model.ts';
import { progressReporter } from './model.ts';
import { PROCESSORS } from './process.ts';
import { Supervisor, type ServiceSpec } from '../../infra/index.ts';

const BIN = fileURLToPath(new URL('../../bin/turnstream.js', import.meta.url));

/** The services `up` runs, in start order; each only if its command exists. */
function services(program: Command, gatewayUrl: string, dashboardPort: number): ServiceSpec[] {
  const has = (name: string) => program.commands.some((c) => c.name() === name);
  const httpOk = (url: string) => async () => (await fetch(url, { signal: AbortSignal.timeout(2000) })).ok;
  const list: ServiceSpec[] = [];
  if (has('gateway')) list.push({ name: 'gateway', args: ['gateway'], url: gatewayUrl, healthy: httpOk(`${gatewayUrl}/healthz`) });
  if (has('process')) {
    for (const p of PROCESSORS) list.push({ name: p, args: ['process', p] });
  }
  if (has('train')) list.push({ name: 'trainer', args: ['train'] });
  if (has('sink')) list.push({ name: 'clickhouse-sink', args: ['sink'] });
  if (has('dashboard')) {
    const url = `http://127.0.0.1:${dashboardPort}`;
    list.push({
      name: 'dashboard',
      args: ['dashboard', '--port', String(dashboardPort)],
      url: `${url}/dashboard`,
      healthy: httpOk(`${url}/dashboard`),
    });
  }
  return list;
}

/**
 * Fetches and builds native TensorFlow once, with progress, before the services that train start
 * and find it in the cache (they wait on its lock otherwise). Not had: one line, and they train on wasm.
 */
async function prepareNativeTensorflow(config: TurnstreamConfig, say: (s: string) => void): Promise<void> {
  const want = config.tfjs.backend;
  if (want === 'wasm' || want === 'cpu') return;
  const variant = want === 'tensorflow-gpu' || (want === 'auto' && config.tfjs.gpu !== 'off' && detectCudaDevice().present) ? 'gpu' : 'cpu';
  const progress = progressReporter(process.stderr);
  try {
    const n = await ensureNativeTensorflow({ dir: config.tfjs.nativeDir, variant, onProgress: progress.onProgress });
    say(
      `turnstream: native TensorFlow (${variant}) ${n.built ? `built in ${(n.ms / 1000).toFixed(0)} s` : 'ready'}: the trainer runs on it`,
    );
  } catch (err) {
    say(
      `turnstream: native TensorFlow (${variant}) not had: ${(err as Error).message}; the trainer runs on wasm (turnstream doctor says more)`,
    );
  } finally {
    progress.stop();
  }
}

export function register(program: Command): void {
  program
    .command('up')
    .description('run the whole loop on this machine: infra (unless endpoints are given), gateway, processors, trainer, sink')
    .option('--keep-infra', 'leave Kafka, the registry and ClickHouse running after Ctrl-C')
    .option('--only <names>', 'comma-separated services to run (default: all)')
    .option('--dashboard-port <port>', 'port of the analytics dashboard', '30001')
    .action(async (flags: { keepInfra?: boolean; only?: string; dashboardPort: string }) => {
      const config = loadConfig();
      const say = (s: string) => process.stdout.write(`${s}\n`);
      // Fetched once here (with progress) so the services find it in the cache.
      say(`turnstream: model ${config.model.spec}${config.upstream.baseUrl ? ` (gateway proxies to ${config.upstream.baseUrl})` : ''}`);
      const served = await servedModel(config);
      say(served.kind === 'llama' ? `  ${served.name}  ${served.path}` : '  the built-in tiny model');
      const modelName = config.upstream.baseUrl
        ? (config.upstream.model ?? 'default')
        : served.kind === 'llama'
          ? served.name
          : served.modelId;
      await prepareNativeTensorflow(config, say);
      say('turnstream: starting the local stack (Kafka, Schema Registry, ClickHouse)…');
      const stack: StackUpResult = await stackUpFor(config, (p) => say(`  ${p.service}: ${p.message}`));
      const startedInfra = Object.values(stack.services).some((s) => s.state === 'started');
      say(`  kafka      ${stack.brokers}\n  registry   ${stack.registryUrl}\n  clickhouse ${stack.clickhouseUrl}   (${stack.ms} ms)`);

      // Topics and schemas once, before the services race to create them.
      const kafka = createKafka({ brokers: parseBrokers(stack.brokers), clientId: 'turnstream-up', security: config.security.kafka });
      await ensureTopics(kafka, { naming: { prefix: config.topicPrefix } });
      await createEventCodecs({
        registryUrl: stack.registryUrl,
        registrySecurity: config.security.registry,
        naming: { prefix: config.topicPrefix },
      });

      const gatewayUrl = `http://${config.host}:${config.gateway.port}`;
      const only = flags.only?.split(',').map((s) => s.trim());
      const specs = services(program, gatewayUrl, Number(flags.dashboardPort)).filter((s) => !only || only.includes(s.name));
      const nameWidth = Math.max(0, ...specs.map((s) => s.name.length));
      const sup = new Supervisor({
        bin: BIN,
        logDir: join(config.home, 'logs'),
        logMaxBytes: config.logMaxBytes,
        logKeep: config.logKeep,
        env: { ...process.env, KAFKA_BROKERS: stack.brokers, SCHEMA_REGISTRY_URL: stack.registryUrl, CLICKHOUSE_URL: stack.clickhouseUrl },
        onChange: (name, state, detail) => say(`  ${name.padEnd(nameWidth)} ${state}${detail ? `  (${detail})` : ''}`),
      });
      say('turnstream: starting services…');
      for (const s of specs) sup.start(s);
      const ready = await sup.waitReady(180000);
      say('');
      const urlWidth = Math.max(0, ...sup.states().map((s) => (s.url ?? '').length));
      for (const s of sup.states())
        say(
          `  ${s.name.padEnd(nameWidth)} ${s.state.padEnd(10)} pid ${String(s.pid ?? '-').padEnd(7)} ${(s.url ?? '').padEnd(urlWidth)}  log: ${s.log}`,
        );
      say(
        ready
          ? '\nturnstream is up. Ctrl-C stops everything.'
          : '\nturnstream is up, but some services are not ready (see their logs). Ctrl-C stops everything.',
      );
      if (specs.some((s) => s.name === 'gateway')) {
        say(
          `Try:  curl -s ${gatewayUrl}/v1/chat/completions -H 'content-type: application/json' -d '{"model":"${modelName}","messages":[{"role":"user","content":"What is the capital of France? Answer in one sentence."}]}'`,
        );
      }

      let stopping = false;
      const stop = async () => {
        if (stopping) return;
        stopping = true;
        say('\nturnstream: stopping services…');
        await sup.stopAll();
        if (startedInfra && !flags.keepInfra) {
          say('turnstream: stopping the local stack…');
          await stackDown({ home: config.home });
        }
        say('turnstream: stopped.');
        process.exit(0);
      };
      process.on('SIGINT', () => void stop());
      process.on('SIGTERM', () => void stop());
    });
}
