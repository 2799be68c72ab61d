/**
 * The sandbox's own watch on its parent. A sandbox's init dies with the sandbox's outer process
 * only once it has asked the kernel to (a few milliseconds into its start), and the outer
 * process dies with this one the same way; a parent killed in those milliseconds (kill -9,
 * Ctrl-C) would leave the command running without its wall clock. So every command starts
 * behind a watchdog: a shell in the sandbox blocked reading fd 3, a socket whose other end only
 * this process holds. When this process dies, by any means, the kernel closes that end, the
 * read returns, and the watchdog kills every process in the sandbox's PID namespace
 * (`kill -9 -1`); the init then follows its command. The command itself runs without fd 3.
 * The watchdog is one of the sandbox's processes (it counts toward the process limit). It is
 * started from a subshell that exits at once, so it is the init's child, not the command's: a
 * command that waits for all its children (`os.wait()` until ECHILD, a supervisor's
 * `waitpid(-1)`) would otherwise wait for the watchdog for ever.
 */

/** The fd the lifeline has in the sandbox. */
export const LIFELINE_FD = 3;

/** What goes before the command inside the sandbox: the watchdog, then `exec` of the rest. */
export const lifelineArgv = (): string[] => [
  'sh',
  '-c',
  `( { read _ <&${LIFELINE_FD}; kill -9 -1; } & ); exec "$@" ${LIFELINE_FD}<&-`,
  'sandbox',
];
