/**
 * What `turnstream eval` needs of the configuration and of the served model. The CLI passes its
 * whole TurnstreamConfig (cli/config.ts) and its served-model resolver (cli/served-model.ts); eval
 * reads only these fields, so it imports nothing of cli.
 */
import type { ConnectionSecurity } from '../streams/index.ts';
import type { FamilyStepSettings } from '../trainer/index.ts';

/** The learner settings of eval's runs (`TRAIN_*`; cli/config.ts's TrainConfig has them all). */
export interface EvalTrainConfig extends Partial<FamilyStepSettings> {
  /** LoRA rank. `TRAIN_LORA_RANK` */
  loraRank: number;
  /** LoRA alpha. `TRAIN_LORA_ALPHA` */
  loraAlpha: number;
  /** Matrices LoRA adapts. `TRAIN_LORA_TARGETS` */
  loraTargets: string[];
  /** Adapt only the last N layers; 0 = all. `TRAIN_LORA_LAST_LAYERS` */
  loraLastLayers: number;
  /** Tokens of one training pass (eval caps it at 512). `TRAIN_MAX_TOKENS` */
  maxTrainTokens: number;
  /** Largest KL of one step. `TRAIN_MAX_KL` @default undefined = LORA_MAX_KL */
  maxKl: number | undefined;
  /** Measure the OPD hint on the frozen base. `TRAIN_OPD_ON_BASE` */
  opdOnBase: boolean;
  /** Truncated importance weights for the engine's log-prob mismatch. `TRAIN_MISMATCH_TIS` */
  mismatchTis: boolean;
}

/** The configuration `turnstream eval` reads. */
export interface EvalConfig {
  /** Folder of the local stack; `<home>/eval/latest.json` is the dashboard's eval panel. `TURNSTREAM_HOME` */
  home: string;
  /** The weight store holding the built-in model's base. `TURNSTREAM_WEIGHTS_DIR` */
  weightsDir: string;
  /** `--pipeline`: Kafka bootstrap servers; unset = the local stack's. `KAFKA_BROKERS` */
  kafkaBrokers: string | undefined;
  /** `--pipeline`: the registry; unset = the local stack's. `SCHEMA_REGISTRY_URL` */
  schemaRegistryUrl: string | undefined;
  /** `--pipeline`: TLS and logins of Kafka and the registry. `KAFKA_SASL_*`, `SCHEMA_REGISTRY_*`, … */
  security: ConnectionSecurity;
  model: {
    /** The served model when `--model` is not given. `TURNSTREAM_MODEL` */
    spec: string;
  };
  train: EvalTrainConfig;
}

/** The model eval trains: the built-in tiny model, or a GGUF checkpoint trained as LoRA versions. */
export type EvalServedModel =
  | { kind: 'builtin' }
  | {
      kind: 'llama';
      /** Display name. */
      name: string;
      path: string;
      sha256: string;
      /** System prompt of conversations without one. */
      systemPrompt: string | undefined;
    };
