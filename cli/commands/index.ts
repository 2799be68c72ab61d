import type { Command } from 'commander';

/** Every sub-command's `register`; add one line per command file. */
export const commands: Array<(program: Command) => void> = [];
