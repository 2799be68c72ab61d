/** The settings of one evaluation run, with the defaults the in-process and pipeline runs share. */
import type { TrainMethod } from '../processors/index.ts';
import { LEARNER_LR } from '../trainer/index.ts';
import { DEFAULT_HELD_OUT, type Persona } from './persona.ts';

export interface EvalSettings {
  personas: Persona[];
  interactions: number;
  seeds: number;
  /** The seeds run: 1..seeds, or the one seed asked for. */
  seedList: number[];
  method: TrainMethod;
  batchSize: number;
  lr: number;
  heldOut: number;
  heldOutSamples: number;
}

/** What a caller may leave out of {@link EvalSettings}. */
export type EvalSettingsInput = Pick<EvalSettings, 'personas'> &
  Partial<Omit<EvalSettings, 'personas' | 'seedList'>> & {
    /** Run only this seed (a worker's share of a larger eval); `seeds` still names the whole. */
    onlySeed?: number;
  };

/**
 * Fills in the defaults: 36 interactions, `defaults.seeds` seeds, the combined method, 4
 * interactions per step, `defaults.lr`, 3 of 8 prompts held out, 4 samples per held-out prompt.
 */
export function evalSettings(opts: EvalSettingsInput, defaults: { seeds: number; lr?: number }): EvalSettings {
  const seeds = opts.seeds ?? defaults.seeds;
  return {
    personas: opts.personas,
    interactions: opts.interactions ?? 36,
    seeds,
    seedList: opts.onlySeed ? [opts.onlySeed] : Array.from({ length: seeds }, (_, i) => i + 1),
    method: opts.method ?? 'combined',
    batchSize: opts.batchSize ?? 4,
    lr: opts.lr ?? defaults.lr ?? LEARNER_LR,
    heldOut: opts.heldOut ?? DEFAULT_HELD_OUT,
    heldOutSamples: opts.heldOutSamples ?? 4,
  };
}
