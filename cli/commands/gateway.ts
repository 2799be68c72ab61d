/**
 * `turnstream gateway`: the OpenAI-compatible gateway as one service, built by stack/ from the
 * configuration (its listen address from the flags).
 * `turnstream init-weights`: creates version 0 of the built-in model when the weight store
 * has none (the gateway also does this on start when the store is empty).
 *
 * Kafka and the registry come from KAFKA_BROKERS / SCHEMA_REGISTRY_URL, else the local
 * stack's default addresses; when they are unreachable the gateway still serves and keeps
 * turns in its outbox (`<home>/outbox`) until they are. SIGINT/SIGTERM stop it cleanly: in-flight
 * requests finish, the outbox is drained for a few seconds, the rest stays on disk.
 */
import type { Command } from 'commander';
import { createLogger } from '../../core/index.ts';
import { gatewayService } from '../../stack/index.ts';
import { initCheckpoint, WeightStore } from '../../policy/index.ts';
import { loadConfig, RULES, SettingsReader, type TurnstreamConfig } from '../config.ts';
import { servedModel } from '../served-model.ts';
import { exitOnError } from '../exit-on-error.ts';

/** The gateway's listen address: `--port` / `--host` over PORT / HOST. */
export function gatewayAddress(config: TurnstreamConfig, flags: { port?: string; host?: string }): { port: number; host: string } {
  const r = new SettingsReader({ '--port': flags.port });
  return r.done({ port: r.number('--port', config.gateway.port, RULES.port), host: flags.host ?? config.host }, 'invalid flags');
}

export function register(program: Command): void {
  program
    .command('gateway')
    .description('serve the OpenAI-compatible API and capture every turn to Kafka')
    .option('--port <port>', 'listen port (PORT, default 30000)')
    .option('--host <addr>', 'listen address (HOST, default 127.0.0.1)')
    .option('--model <spec>', 'the model to serve: builtin, a catalog name, a .gguf path or hf:ORG/REPO/FILE.gguf (TURNSTREAM_MODEL)')
    .action(async (flags: { port?: string; host?: string; model?: string }) => {
      const config = loadConfig();
      const logger = createLogger('gateway', config.logLevel);
      const served = config.upstream.baseUrl ? null : await servedModel(config, { spec: flags.model, logger });
      const gw = gatewayService(config, served, {
        ...gatewayAddress(config, flags),
        logger,
        // A wrong password or CA is a setting to fix, not an outage to wait out: one line, exit 2.
        kafka: { onSettingError: exitOnError },
      });
      const url = await gw.start();
      process.stdout.write(`gateway listening on ${url}  (OpenAI base URL: ${url}/v1)\n`);
      let stopping = false;
      const stop = (signal: string): void => {
        if (stopping) return;
        stopping = true;
        logger.info({ signal }, 'stopping gateway');
        gw.stop().then(
          () => process.exit(0),
          (err: unknown) => {
            logger.error({ err }, 'gateway stop failed');
            process.exit(1);
          },
        );
      };
      process.once('SIGINT', () => stop('SIGINT'));
      process.once('SIGTERM', () => stop('SIGTERM'));
    });

  program
    .command('init-weights')
    .description(
      'create version 0 of the built-in model if the weight store has none: the shipped pretrained base, or a random init with --seed',
    )
    .option('--model-id <id>', 'model id', 'turnstream-tiny')
    .option('--seed <n>', 'random init with this seed instead of the shipped base')
    .action(async (flags: { modelId: string; seed?: string }) => {
      const config = loadConfig();
      const latest = await new WeightStore(config.weightsDir).latest(flags.modelId);
      if (latest) {
        process.stdout.write(`${flags.modelId} already has version ${latest.version} at ${latest.uri}\n`);
        return;
      }
      const ref = await initCheckpoint(config.weightsDir, {
        modelId: flags.modelId,
        ...(flags.seed !== undefined ? { seed: Number(flags.seed) } : {}),
      });
      process.stdout.write(`created ${flags.modelId} v0 at ${ref.uri} (sha256 ${ref.sha256})\n`);
    });
}
