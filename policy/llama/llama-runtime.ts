/**
 * The llama.cpp runtime of this process (node-llama-cpp), loaded once: a prebuilt binary for
 * the best GPU it finds (CUDA, Vulkan, Metal), else the CPU one; never a source build at run
 * time (a missing toolchain would make that fail slowly). One line says which was chosen.
 */
import { getLlama, LlamaLogLevel, type Llama } from 'node-llama-cpp';
import { ErrorCodes, TurnstreamError, type Logger } from '../../core/index.ts';

export interface LlamaRuntimeOptions {
  /** `auto` uses a GPU build when one loads; `false` forces the CPU. @default 'auto' */
  gpu?: 'auto' | false;
  logger?: Pick<Logger, 'info' | 'warn' | 'debug'>;
}

let runtime: Promise<Llama> | null = null;

/** What computes: `cuda`, `vulkan`, `metal` or `cpu`. */
export function llamaBackendName(llama: Llama): string {
  return llama.gpu === false ? 'cpu' : llama.gpu;
}

/** The process's llama.cpp runtime (the first call's options win). */
export function llamaRuntime(opts: LlamaRuntimeOptions = {}): Promise<Llama> {
  runtime ??= (async () => {
    try {
      const llama = await getLlama({
        gpu: opts.gpu ?? 'auto',
        build: 'never',
        logLevel: LlamaLogLevel.warn,
        logger: (level, message) => {
          const text = message.trim();
          if (!text) return;
          if (level === LlamaLogLevel.error || level === LlamaLogLevel.fatal) opts.logger?.warn({ llama: text }, 'llama.cpp');
          else opts.logger?.debug({ llama: text }, 'llama.cpp');
        },
      });
      opts.logger?.info(
        { backend: llamaBackendName(llama), cpuMathCores: llama.cpuMathCores },
        `llama.cpp runs on ${llamaBackendName(llama)}`,
      );
      return llama;
    } catch (err) {
      runtime = null;
      throw new TurnstreamError(
        ErrorCodes.PREREQUISITE,
        `llama.cpp could not start (${(err as Error).message}); reinstall with npm install (node-llama-cpp ships prebuilt binaries)`,
        { cause: err },
      );
    }
  })();
  return runtime;
}
