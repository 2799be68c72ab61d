import type { GgufFile } from '../gguf/gguf-file.ts';
import type { TensorSource } from './tensor-source.ts';

/** The tensors of an open GGUF file, dequantized on read. */
export function ggufTensorSource(file: GgufFile): TensorSource {
  return { names: new Set(file.tensors.map((t) => t.name)), dims: (n) => [...file.tensor(n).dims], read: (n) => file.readTensor(n) };
}
