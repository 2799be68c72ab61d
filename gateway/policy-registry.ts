/**
 * The policies the built-in engine serves (trainer/'s tfjs model): the version registry
 * (version-registry.ts) over a weight store, hot-swappable with no pause.
 */
import { dirname } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { Logger } from '../core/index.ts';
import type { LoadPolicyOptions, PolicyHandle } from '../policy/index.ts';
import { VersionRegistry } from './version-registry.ts';

export type PolicyLoader = (opts: LoadPolicyOptions) => Promise<PolicyHandle>;

export interface PolicyRegistryOptions {
  weightsDir: string;
  modelId: string;
  load: PolicyLoader;
  logger?: Pick<Logger, 'info' | 'warn' | 'error'>;
  /** Called after every swap (metrics). */
  onSwap?: (policy: PolicyHandle) => void;
}

export class PolicyRegistry extends VersionRegistry<PolicyHandle> {
  constructor(private readonly opts: PolicyRegistryOptions) {
    super({
      modelId: opts.modelId,
      what: 'policy',
      logger: opts.logger,
      onSwap: opts.onSwap,
      // A version announced with a local path is read from where it was written.
      load: (wv) =>
        opts.load({
          weightsDir: weightsDirOf(wv.uri, wv.modelId) ?? opts.weightsDir,
          modelId: wv.modelId,
          version: wv.version,
          expectedSha256: wv.sha256,
        }),
    });
  }

  /** The policy being served, or null before the first load. */
  get policy(): PolicyHandle | null {
    return this.current;
  }

  /** Loads the latest version of the store (or `version`) and serves it. */
  async loadInitial(version?: number): Promise<PolicyHandle> {
    const policy = await this.opts.load({ weightsDir: this.opts.weightsDir, modelId: this.opts.modelId, version });
    this.install(policy);
    return policy;
  }
}

/** `<weightsDir>/<modelId>/v<n>` (a path or file:// URI) → `<weightsDir>`; null when not local. */
export function weightsDirOf(uri: string, modelId: string): string | null {
  let path: string;
  if (uri.startsWith('file://')) path = fileURLToPath(uri);
  else if (uri.startsWith('/')) path = uri;
  else return null;
  path = path.replace(/\/+$/, '');
  const modelDir = dirname(path);
  if (!modelDir.endsWith(`/${modelId}`)) return null;
  return dirname(modelDir);
}
