/**
 * The `turnstream` command. Each sub-command lives in cli/commands/<name>.ts and exports
 * `register(program)`; cli/commands/index.ts lists them. Only the module of the command being run
 * is loaded, and the modules every command needs (the configuration, the error line) once one
 * runs: `turnstream --help` loads commander and the list, nothing else.
 */
import { Command } from 'commander';
import { registerCommands, requestedCommand } from './commands/index.ts';

/** The root command, without its sub-commands. */
export function createProgram(): Command {
  const program = new Command();
  program.name('turnstream').description('Train a chat model simply by talking to it.').version('0.1.0').showHelpAfterError();
  // Root options (--version) only before the sub-command: `export --version N` is the sub-command's.
  program.enablePositionalOptions();
  return program;
}

export async function main(argv: string[]): Promise<void> {
  const program = createProgram();
  const requested = requestedCommand(argv);
  // A command runs: its errors end it with one line. Installed before its module loads, so these
  // handlers run before any a library installs (cli/exit-on-error.ts).
  const errors = requested === undefined ? undefined : await import('./exit-on-error.ts');
  errors?.installExitOnError();
  try {
    const entry = await registerCommands(program, requested);
    // Any command with --json: stdout is one JSON object, logs and other output go to stderr.
    program.hook('preAction', async (_program, action) => {
      if (action.opts().json === true) (await import('./json-output.ts')).useJsonOutput();
    });
    // The configuration is checked before any command runs, so a bad variable ends the command at
    // once (one line naming every problem, exit code 2) rather than deep inside it, and sets what
    // `selectBackend()` does in every command that trains or scores. `--help` runs no action and
    // so works whatever the environment holds.
    program.hook('preAction', async () => {
      const { loadConfig } = await import('./config.ts');
      const { tfjs } = loadConfig();
      if (entry?.tfjs === false) return;
      const { configureBackend } = await import('../policy/index.ts');
      configureBackend({ preferred: tfjs.backend, native: { dir: tfjs.nativeDir, gpu: tfjs.gpu } });
    });
    await program.parseAsync(argv);
  } catch (err) {
    // One line that says what is wrong; a bad flag, setting or file is a usage error (2), like commander's own.
    (errors ?? (await import('./exit-on-error.ts'))).exitOnError(err);
  }
}
