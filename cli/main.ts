/**
 * The `turnstream` command. Each sub-command lives in cli/commands/<name>.ts and exports
 * `register(program)`; this file only wires them.
 */
import { Command } from 'commander';
import { commands } from './commands/index.ts';

export async function main(argv: string[]): Promise<void> {
  const program = new Command();
  program
    .name('turnstream')
    .description('Train a chat model simply by talking to it.')
    .version('0.1.0')
    .showHelpAfterError();
  for (const register of commands) register(program);
  await program.parseAsync(argv);
}
