/** The GGUF file a model benchmark runs on: a catalog name, a path or hf:…, or `tiny` (a tiny random Llama written for a smoke run). */
import { createHash } from 'node:crypto';
import { createReadStream } from 'node:fs';
import { join } from 'node:path';
import { resolveModel, writeTinyModel } from '../policy/index.ts';
import type { BenchConfig } from './options.ts';

export interface BenchModelFile {
  path: string;
  name: string;
  sha256: string;
}

/** `spec`'s file; `tiny` is written under `tmp` with a context of at least `contextLength` tokens. */
export async function benchModelFile(config: BenchConfig, spec: string, contextLength: number, tmp: string): Promise<BenchModelFile> {
  if (spec === 'tiny') {
    const tiny = await writeTinyModel(join(tmp, 'tiny.gguf'), { architecture: 'llama', contextLength: Math.max(512, contextLength) });
    return { path: tiny.path, name: 'tiny', sha256: tiny.sha256 };
  }
  const m = await resolveModel(spec, {
    cacheDir: config.model.cacheDir,
    hfEndpoint: config.model.hfEndpoint,
    hfToken: config.model.hfToken,
  });
  if (!m.path) throw new Error(`a benchmark of the llama engine needs a GGUF model, not ${spec}`);
  return { path: m.path, name: m.name, sha256: m.sha256 ?? (await sha256File(m.path)) };
}

async function sha256File(path: string): Promise<string> {
  const h = createHash('sha256');
  for await (const chunk of createReadStream(path)) h.update(chunk as Buffer);
  return h.digest('hex');
}
