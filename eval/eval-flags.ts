/**
 * The flags of `turnstream eval` as the command line gives them (strings, as commander parses
 * them), and the defaults that depend on the run: `--quick` (a few minutes) and, on the real
 * model, the standard run measured in docs/learning.md.
 */

/** `turnstream eval`'s flags; the CLI declares them, with their defaults (cli/commands/eval.ts). */
export interface EvalFlags {
  /** Personas JSON. @default the built-in model's file, or the real model's */
  personas?: string;
  /** Interactions per persona. @default '36' (24 on a GGUF model) */
  interactions: string;
  /** Seeds per persona. @default '3' */
  seeds: string;
  /** Print one JSON object. */
  json?: boolean;
  /** combined | rl | opd. @default 'combined' */
  method: string;
  /** Interactions per learner step (samples per step with `--users`). @default '4' (2 on a GGUF model, 8 with `--users`) */
  batchSize: string;
  /** Learning rate. @default LEARNER_LR, or LORA_LR on a GGUF model */
  lr?: string;
  /** Share of each persona's prompts held out. @default '0.375' */
  heldOut: string;
  /** Sampled replies per held-out prompt and version. @default '4' */
  heldOutSamples: string;
  /** Score every n-th version, the first and last always. @default '1' (3 on a GGUF model) */
  evalEvery: string;
  /** Replies per held-out prompt when a run's peak and last version are measured again (0: not). @default '16' (4 with `--quick`) */
  peakSamples: string;
  /** Folder of the reports. @default '.turnstream/eval' */
  out: string;
  /** Comma-separated persona names. */
  only?: string;
  /** Force a tfjs backend. */
  backend?: string;
  /** Go through the gateway and the Kafka pipeline. */
  pipeline?: boolean;
  /** Many users, one model: this many users sharing one preference, plus one adversary. */
  users?: string;
  /** With `--users`: how many times as often as each other user the adversary talks. @default '1' */
  adversaryRate: string;
  /** With `--users`: the batcher's per-user cap. @default '0.25' */
  maxUserShare: string;
  /** With `--users`: probability that one other user also reacts to a reply. @default '0' */
  sharedRate: string;
  /** The model to train, as TURNSTREAM_MODEL. @default the served model */
  model?: string;
  /** A few-minute subset. */
  quick?: boolean;
  /** (persona, seed) runs side by side in this many processes. @default '1' (2 on a GGUF model with 2+ cores) */
  workers: string;
  /** Run only seed k of `--seeds`. */
  seed?: string;
  /** Longest reply of the real model. @default '96' */
  maxTokens: string;
  /** Sampling temperature of the real model. @default '0.7' */
  temperature: string;
  /** Adapt only the last n layers. @default TRAIN_LORA_LAST_LAYERS */
  loraLastLayers?: string;
}

/**
 * The defaults that depend on the run: `--quick` (a few minutes) and, on the real model, the
 * standard run measured in docs/learning.md. A value given on the command line keeps its place.
 */
export function applyRunDefaults(f: EvalFlags, builtin: boolean, given: (flag: keyof EvalFlags) => boolean, cores: number): void {
  if (f.quick) {
    // 12 on the real model: its ten-seed curve is at 0.17 after 6 interactions and 0.48 after 12.
    if (!given('interactions')) f.interactions = builtin ? '8' : '12';
    if (!given('seeds')) f.seeds = '1';
    if (!given('heldOutSamples')) f.heldOutSamples = '2';
    if (!given('peakSamples')) f.peakSamples = '4';
    // On the real model scoring the held-out prompts after every version was 60 % of the run; the
    // base, the middle and the last version draw the curve, and the two personas run side by side.
    if (!builtin) {
      if (!given('evalEvery')) f.evalEvery = '3';
      if (!given('workers')) f.workers = String(Math.min(2, cores));
    }
  } else if (!builtin && !f.users) {
    // The real model's standard run: within an hour on 2 cores.
    if (!given('interactions')) f.interactions = '24';
    if (!given('evalEvery')) f.evalEvery = '3';
    if (!given('workers')) f.workers = String(Math.min(2, cores));
  }
}
