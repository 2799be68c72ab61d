/** Where the trainer reads a checkpoint's tensors from (a GGUF file, or tensors a test made). */
export interface TensorSource {
  readonly names: ReadonlySet<string>;
  /** GGUF dimensions, fastest-varying first (a weight matrix is [in, out], stored [out][in]). */
  dims(name: string): number[];
  /** The tensor's values, dequantized. */
  read(name: string): Promise<Float32Array>;
}
