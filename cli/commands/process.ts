/**
 * `turnstream process <session-assembler|judge|sample-builder|trajectory-assembler|group-builder>
 * [--instance id]`: one processor service. Run several with distinct `--instance` ids to share the
 * partitions.
 */
import type { Command } from 'commander';
import type { ProcessorHandle } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { connectService, PROCESSORS, processorService, teacherUpstream, type ProcessorName } from '../../stack/index.ts';
import { servedModel } from '../served-model.ts';
import { loadConfig, type TurnstreamConfig } from '../config.ts';

export { PROCESSORS, type ProcessorName };

/**
 * Starts one processor from the configuration, built by stack/: `config.processor` for every
 * processor, `config.session` for the assembler, `config.judge` for the judge, `config.teacher`
 * for the sample builder (its teacher defaults to the upstream engine when one is configured,
 * else the served model).
 */
export async function startProcessorFromConfig(name: ProcessorName, config: TurnstreamConfig, instanceId = '0'): Promise<ProcessorHandle> {
  const logger = createLogger(name, config.logLevel);
  const link = await connectService(config, `turnstream-${name}-${instanceId}`, logger);
  // The served model is the sample builder's teacher unless a teacher engine is configured.
  const served =
    name === 'sample-builder' && config.trainMethod !== 'rl' && !teacherUpstream(config) ? await servedModel(config, { logger }) : null;
  return processorService(config, name, link, served, { instanceId, logger });
}

export function register(program: Command): void {
  program
    .command('process')
    .description(`run one stream processor: ${PROCESSORS.join(', ')}`)
    .argument('<name>', PROCESSORS.join(' | '))
    .option('--instance <id>', 'instance id, unique among instances of this processor', '0')
    .action(async (name: string, flags: { instance: string }) => {
      if (!(PROCESSORS as readonly string[]).includes(name)) {
        process.stderr.write(`turnstream process: unknown processor "${name}"; expected one of ${PROCESSORS.join(', ')}\n`);
        process.exitCode = 2;
        return;
      }
      const config = loadConfig();
      const handle = await startProcessorFromConfig(name as ProcessorName, config, flags.instance);
      await handle.ready;
      process.stdout.write(`turnstream ${name} (instance ${flags.instance}) is running\n`);
      let stopping = false;
      const stop = () => {
        if (stopping) return;
        stopping = true;
        void handle.stop().then(
          () => process.exit(0),
          (err) => {
            process.stderr.write(`turnstream ${name}: stop failed: ${(err as Error).message}\n`);
            process.exit(1);
          },
        );
      };
      process.on('SIGINT', stop);
      process.on('SIGTERM', stop);
      await handle.closed;
    });
}
