import type { Command } from 'commander';

/** What a command module exports: `register(program)` adds its command(s), options and action. */
export interface CommandModule {
  register(program: Command): void;
}

/** The command modules, each loaded only when one of its commands runs. */
export const MODULES = {
  bench: () => import('./bench.ts'),
  chaos: () => import('./chaos.ts'),
  dashboard: () => import('./dashboard.ts'),
  dlq: () => import('./dlq.ts'),
  doctor: () => import('./doctor.ts'),
  eval: () => import('./eval.ts'),
  export: () => import('./export.ts'),
  gateway: () => import('./gateway.ts'),
  gym: () => import('./gym.ts'),
  import: () => import('./import.ts'),
  infra: () => import('./infra.ts'),
  model: () => import('./model.ts'),
  openclaw: () => import('./openclaw.ts'),
  pretrain: () => import('./pretrain.ts'),
  process: () => import('./process.ts'),
  replay: () => import('./replay.ts'),
  report: () => import('./report.ts'),
  sink: () => import('./sink.ts'),
  train: () => import('./train.ts'),
  up: () => import('./up.ts'),
} satisfies Record<string, () => Promise<CommandModule>>;

/** One sub-command, as `turnstream --help` lists it, and the module that has the rest of it. */
export interface CommandEntry {
  name: string;
  /** What `turnstream --help` shows after the name: ` [options]` and the arguments. */
  usage: string;
  /** Its one line in `turnstream --help`: the same as the module's `.description(…)` (test/unit/cli/help.test.ts compares them). */
  description: string;
  /** The module that registers it, a key of {@link MODULES} (several entries may share one). */
  module: keyof typeof MODULES;
  /**
   * `false`: its module loads no tfjs backend at start (policy/), so the tfjs settings are not
   * applied before it runs, and the command starts without loading tfjs; a test checks its imports.
   * A command that loads policy/ later sets them itself (doctor, for a check it has not cached).
   * @default true
   */
  tfjs?: false;
}

/**
 * Every sub-command, in the order `turnstream --help` lists them. Only the module of the command
 * being run is loaded (cli/main.ts): `turnstream --help` loads none, `turnstream infra status`
 * loads infra's, never tfjs, node-llama-cpp or the registry client it does not use.
 */
export const COMMANDS: readonly CommandEntry[] = [
  {
    name: 'up',
    usage: ' [options]',
    description: 'run the whole loop on this machine: infra (unless endpoints are given), gateway, processors, trainer, sink',
    module: 'up',
  },
  {
    name: 'infra',
    usage: '',
    description: 'start, stop or inspect the local Kafka, Schema Registry and ClickHouse',
    module: 'infra',
    tfjs: false,
  },
  {
    name: 'gateway',
    usage: ' [options]',
    description: 'serve the OpenAI-compatible API and capture every turn to Kafka',
    module: 'gateway',
  },
  {
    name: 'init-weights',
    usage: ' [options]',
    description:
      'create version 0 of the built-in model if the weight store has none: the shipped pretrained base, or a random init with --seed',
    module: 'gateway',
  },
  {
    name: 'process',
    usage: ' [options] <name>',
    description: 'run one stream processor: session-assembler, judge, sample-builder, trajectory-assembler, group-builder',
    module: 'process',
  },
  {
    name: 'train',
    usage: ' [options]',
    description: 'run the learner: samples → PPO/OPD steps → weight versions (exactly once with the consumed offsets)',
    module: 'train',
  },
  {
    name: 'sink',
    usage: ' [options]',
    description: 'store every topic in ClickHouse for analytics (idempotent, resumes after outages)',
    module: 'sink',
  },
  {
    name: 'dashboard',
    usage: ' [options]',
    description: 'serve the analytics dashboard (learning curve, funnel, judges, users, DLQ)',
    module: 'dashboard',
    tfjs: false,
  },
  {
    name: 'report',
    usage: ' [options]',
    description: 'print the funnel and the learning curve (reward per policy version) from ClickHouse',
    module: 'report',
    tfjs: false,
  },
  {
    name: 'import',
    usage: ' [options] <file>',
    description: 'import historical sessions (JSONL) into the turns topic',
    module: 'import',
  },
  {
    name: 'replay',
    usage: ' [options]',
    description: 're-derive pairs, judgements and samples from history with another configuration, into tagged topics',
    module: 'replay',
  },
  {
    name: 'dlq',
    usage: '',
    description: 'dead letters: list them, show one, re-send them to their original topic once the cause is fixed (each at most once)',
    module: 'dlq',
    tfjs: false,
  },
  {
    name: 'export',
    usage: ' [options]',
    description: 'write a weight version for use elsewhere: its LoRA adapter GGUF, or (--merged) the base with the adapter folded in',
    module: 'export',
  },
  {
    name: 'pretrain',
    usage: ' [options]',
    description: 'pretrain the base checkpoint (version 0) of the built-in model on the generated chat corpus',
    module: 'pretrain',
  },
  {
    name: 'eval',
    usage: ' [options]',
    description: 'simulated users with hidden preferences: held-out satisfaction per weight version',
    module: 'eval',
  },
  {
    name: 'gym',
    usage: ' [options]',
    description: 'agentic RL from tasks: sandboxed tool-using rollouts through the gateway, verifier rewards, GRPO through the pipeline',
    module: 'gym',
  },
  {
    name: 'bench',
    usage: ' [options] [name]',
    description: 'run a benchmark (with its baseline, in one run) and print the figures; bench NAME --help lists its options',
    module: 'bench',
  },
  {
    name: 'chaos',
    usage: ' [options]',
    description:
      'fault suite on a stack of its own: kill -9 the broker, gateway, processors, trainer; stop ClickHouse and the registry; corrupt records; an oversized turn; 200 slow readers',
    module: 'chaos',
  },
  {
    name: 'model',
    usage: '',
    description: 'get models: fetch one into the cache, list the known and cached ones',
    module: 'model',
  },
  {
    name: 'openclaw',
    usage: '',
    description: 'OpenClaw integration: the rl-training-headers plugin',
    module: 'openclaw',
    tfjs: false,
  },
  {
    name: 'doctor',
    usage: ' [options]',
    description:
      'what this machine gives turnstream: Node, the tfjs backend and why, the native TensorFlow build, CUDA, llama.cpp, the sandbox',
    module: 'doctor',
    tfjs: false,
  },
];

/**
 * The command `argv` (as `process.argv`) runs: the first word after the root options (`-h`,
 * `-V` and their long forms, the only ones), or the one after `help`; undefined for none.
 */
export function requestedCommand(argv: readonly string[]): string | undefined {
  const words = argv.slice(2).filter((a) => !a.startsWith('-'));
  return words[0] === 'help' ? words[1] : words[0];
}

/**
 * Adds every command to `program`: the requested one (with any other its module registers) in
 * full from its module, each other one as a stub with its name and description, which is all
 * `turnstream --help` shows and all `up` looks for. Returns the requested command's entry, if it
 * is one.
 */
export async function registerCommands(program: Command, requested: string | undefined): Promise<CommandEntry | undefined> {
  const entry = COMMANDS.find((c) => c.name === requested);
  const loaded = entry ? await MODULES[entry.module]() : undefined;
  const terms = new Map<Command, string>();
  const help = program.createHelp();
  program.configureHelp({ subcommandTerm: (cmd) => terms.get(cmd) ?? help.subcommandTerm(cmd) });
  let registered = false;
  for (const c of COMMANDS) {
    if (loaded && c.module === entry?.module) {
      // The module registers all of its commands, in the place of its first.
      if (!registered) loaded.register(program);
      registered = true;
    } else terms.set(program.command(c.name).description(c.description), `${c.name}${c.usage}`);
  }
  return entry;
}
