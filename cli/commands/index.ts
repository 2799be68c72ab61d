import type { Command } from 'commander';
import { register as bench } from './bench.ts';
import { register as dashboard } from './dashboard.ts';
import { register as evaluate } from './eval.ts';
import { register as gateway } from './gateway.ts';
import { register as importHistory } from './import.ts';
import { register as infra } from './infra.ts';
import { register as pretrain } from './pretrain.ts';
import { register as processCommand } from './process.ts';
import { register as replay } from './replay.ts';
import { register as report } from './report.ts';
import { register as sink } from './sink.ts';
import { register as train } from './train.ts';
import { register as up } from './up.ts';

/** Every sub-command's `register`, in the order `turnstream --help` lists them. */
export const commands: Array<(program: Command) => void> = [
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
  pretrain,
  evaluate,
  bench,
];
