/**
 * The `turnstream` command. Each sub-command lives in cli/commands/<name>.ts and exports
 * `register(program)`; this file only wires them.
 */
import { Command } from 'commander';
import { commands } from './commands/index.ts';
import { exitOnError, installExitOnError } from './exit-on-error.ts';
import { useJsonOutput } from './json-output.ts';

export async function main(argv: string[]): Promise<void> {
  installExitOnError();
  const program = new Command();
  program.name('turnstream').description('Train a chat model simply by talking to it.').version('0.1.0').showHelpAfterError();
  // Root options (--version) only before the sub-command: `export --version N` is the sub-command's.
  program.enablePositionalOptions();
  // Any command with --json: stdout is one JSON object, logs and other output go to stderr.
  program.hook('preAction', (_program, action) => {
    if (action.opts().json === true) useJsonOutput();
  });
  for (const register of commands) register(program);
  try {
    await program.parseAsync(argv);
  } catch (err) {
    // One line that says what is wrong; a bad flag, setting or file is a usage error (2), like commander's own.
    exitOnError(err);
  }
}
