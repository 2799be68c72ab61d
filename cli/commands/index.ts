import type { Command } from 'commander';
import { configureBackend } from '../../policy/index.ts';
import { loadConfig } from '../config.ts';
import { register as bench } from './bench.ts';
import { register as chaos } from './chaos.ts';
import { register as dashboard } from './dashboard.ts';
import { register as dlq } from './dlq.ts';
import { register as doctor } from './doctor.ts';
import { register as evaluate } from './eval.ts';
import { register as exportVersion } from './export.ts';
import { register as gateway } from './gateway.ts';
import { register as gym } from './gym.ts';
import { register as importHistory } from './import.ts';
import { register as infra } from './infra.ts';
import { register as model } from './model.ts';
import { register as openclaw } from './openclaw.ts';
import { register as pretrain } from './pretrain.ts';
import { register as processCommand } from './process.ts';
import { register as replay } from './replay.ts';
import { register as report } from './report.ts';
import { register as sink } from './sink.ts';
import { register as train } from './train.ts';
import { register as up } from './up.ts';

/**
 * Checks the configuration before any command runs, so a bad variable ends the command at once
 * (cli/main.ts prints the one line naming every problem, exit code 2) rather than deep inside it,
 * and sets what `selectBackend()` does in every command that trains or scores. `--help` runs no
 * action and so works whatever the environment holds.
 */
export function checkConfig(program: Command): void {
  program.hook('preAction', () => {
    const { tfjs } = loadConfig();
    configureBackend({ preferred: tfjs.backend, native: { dir: tfjs.nativeDir, gpu: tfjs.gpu } });
  });
}

/** Every sub-command's `register`, in the order `turnstream --help` lists them (after the configuration check). */
export const commands: Array<(program: Command) => void> = [
  checkConfig,
  up,
  infra,
  gateway,
  processCommand,
  train,
  sink,
  dashboard,
  report,
  importHistory,
  replay,
  dlq,
  exportVersion,
  pretrain,
  evaluate,
  gym,
  bench,
  chaos,
  model,
  openclaw,
  doctor,
];
