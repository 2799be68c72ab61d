/**
 * The `turnstream` command. Each sub-command lives in cli/commands/<name>.ts and exports
 * `register(program)`; this file only wires them.
 */
import { Command } from 'commander';
import { TurnstreamError } from '../streams/errors.ts';
import { commands } from './commands/index.ts';

export async function main(argv: string[]): Promise<void> {
  const program = new Command();
  program.name('turnstream').description('Train a chat model simply by talking to it.').version('0.1.0').showHelpAfterError();
  for (const register of commands) register(program);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    // turnstream's own errors say what is wrong and how to fix it: one line, no stack. A bad
    // flag or setting is a usage error (2), like commander's own.
    if (!(err instanceof TurnstreamError)) throw err;
    process.stderr.write(`turnstream: ${err.message} (${err.code})\n`);
    process.exit(err.code === 'TS_ERR_INVALID_INPUT' ? 2 : 1);
  }
}
