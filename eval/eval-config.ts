/**
 * What `turnstream eval` needs of the configuration and of the served model: the stack's settings
 * (stack/settings.ts; the CLI passes its whole configuration) and the served model
 * (stack/served-model.ts; the CLI passes its resolver), so that eval's learner and gateways are
 * built from them as `turnstream up`'s are.
 */
import type { ServedModel, StackSettings } from '../stack/index.ts';

/** The configuration `turnstream eval` reads. */
export type EvalConfig = StackSettings;

/** The model eval trains: the built-in tiny model, or a GGUF checkpoint trained as LoRA versions. */
export type EvalServedModel = ServedModel;
