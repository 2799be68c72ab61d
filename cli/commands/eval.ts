/**
 * `turnstream eval`: simulated users with hidden preferences talk to the model; the score is the
 * share of replies to held-out prompts that satisfy them, per weight version, over several seeds
 * (eval/). In-process by default (the pipeline's judge, sample builder and learner step,
 * called directly); `--pipeline` sends the personas through the gateway and the Kafka pipeline.
 * This file declares the flags; eval/eval-command.ts runs them.
 */
import { relative } from 'node:path';
import type { Command } from 'commander';
import { createLogger } from '../../core/index.ts';
import { BUILTIN_PERSONAS_FILE, DEFAULT_PERSONAS_FILE, runEvalCommand, type EvalFlags } from '../../eval/index.ts';
import { LEARNER_LR, LORA_LR } from '../../trainer/index.ts';
import { loadConfig } from '../config.ts';
import { servedModel } from '../served-model.ts';
import { endAtOnceOnSignals } from '../exit-on-error.ts';

export function register(program: Command): void {
  program
    .command('eval')
    .description('simulated users with hidden preferences: held-out satisfaction per weight version')
    .option(
      '--personas <file>',
      `personas JSON (default ${relative(process.cwd(), BUILTIN_PERSONAS_FILE)}; the real model's: ${relative(process.cwd(), DEFAULT_PERSONAS_FILE)})`,
    )
    .option('--interactions <n>', 'interactions per persona (24 on a GGUF model)', '36')
    .option('--seeds <k>', 'seeds per persona', '3')
    .option('--json', 'print one JSON object')
    .option('--method <m>', 'combined | rl | opd', 'combined')
    .option('--batch-size <n>', 'interactions per learner step (2 for a GGUF model; samples per step with --users: default 8)', '4')
    .option('--lr <x>', `learning rate (default TRAIN_LR, else the model family's: ${LORA_LR} LoRA, ${LEARNER_LR} built-in)`)
    .option('--held-out <share>', "share of each persona's prompts held out, never trained on", '0.375')
    .option('--held-out-samples <n>', 'sampled replies per held-out prompt and version', '4')
    .option('--eval-every <n>', 'score every n-th version, first and last always (3 on a GGUF model)', '1')
    .option(
      '--peak-samples <n>',
      'replies per held-out prompt when a run that ended below its peak has its peak and last version measured again (0: not again; 4 with --quick)',
      '16',
    )
    .option('--only <names>', 'comma-separated persona names')
    .option('--out <dir>', 'folder for eval.csv, eval.json, eval.svg and curves/<persona>.svg (and .png)', '.turnstream/eval')
    .option('--backend <name>', 'force a tfjs backend')
    .option('--model <spec>', 'the model to train, as TURNSTREAM_MODEL (default: the served model)')
    .option(
      '--quick',
      'a few-minute subset: 2 personas (twosentence-tia and concise-carl when the file has them, else its first two), 1 seed, 12 interactions (8 on the built-in model), 2 samples per held-out prompt; on a GGUF model every 3rd version scored and the two personas side by side',
    )
    .option('--max-tokens <n>', 'longest reply of the real model', '96')
    .option('--temperature <t>', 'sampling temperature of the real model', '0.7')
    .option('--lora-last-layers <n>', 'adapt only the last n layers (default TRAIN_LORA_LAST_LAYERS)')
    .option('--workers <n>', 'run the (persona, seed) runs in n processes side by side, one report (2 on a GGUF model with 2+ cores)', '1')
    .option('--seed <k>', 'run only seed k of --seeds (how --workers shares out the runs)')
    .option('--pipeline', 'go through the gateway and the Kafka pipeline (needs the stack)')
    .option(
      '--users <k>',
      'many users, one model: k users sharing the preference of --only NAME (default curious-quinn, on a GGUF model concise-carl) + 1 adversary, consensus on vs off (ALGORITHMS.md §7)',
    )
    .option('--adversary-rate <n>', 'with --users: how many times as often as each other user the adversary talks', '1')
    .option('--max-user-share <x>', "with --users: the batcher's per-user cap", '0.25')
    .option('--shared-rate <p>', 'with --users: probability that one other user also reacts to a reply (shared thread)', '0')
    .action(async (flags: EvalFlags, cmd: Command) => {
      // Results are written at the end: Ctrl-C has nothing to save and should not wait for tfjs.
      endAtOnceOnSignals();
      const config = loadConfig();
      // stdout carries only the result (one JSON object with --json): progress and logs go to stderr.
      const logger = createLogger('eval', 'warn');
      const { output, error } = await runEvalCommand({
        flags,
        given: (name) => cmd.getOptionValueSource(name) !== 'default',
        config,
        servedModel: (spec) => servedModel(config, { spec, logger }),
        commandLine: { execPath: process.execPath, script: process.argv[1], args: process.argv.slice(2) },
        progress: (line) => process.stderr.write(`eval: ${line}\n`),
        logger,
      });
      process.stdout.write(output);
      if (error) throw error;
    });
}
