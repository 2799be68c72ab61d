import type { Command } from 'commander';
import { register as infra } from './infra.ts';
import { register as up } from './up.ts';
import { register as bench } from './bench.ts';

/** Every sub-command's `register`; add one line per command file. */
export const commands: Array<(program: Command) => void> = [infra, up, bench];
import { register as processCommand } from './process.ts'; commands.push(processCommand);
import { register as gatewayCommand } from './gateway.ts'; commands.push(gatewayCommand);
import { register as pretrainCommand } from './pretrain.ts'; commands.push(pretrainCommand);
import { register as sinkCommand } from './sink.ts'; commands.push(sinkCommand);
import { register as reportCommand } from './report.ts'; commands.push(reportCommand);
import { register as dashboardCommand } from './dashboard.ts'; commands.push(dashboardCommand);
import { register as trainCommand } from './train.ts'; commands.push(trainCommand);
import { register as importCommand } from './import.ts'; commands.push(importCommand);
import { register as replayCommand } from './replay.ts'; commands.push(replayCommand);
import { register as evalCommand } from './eval.ts'; commands.push(evalCommand);
