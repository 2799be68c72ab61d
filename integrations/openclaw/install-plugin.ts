/**
 * Installs the `rl-training-headers` plugin into an OpenClaw state directory: copies it to
 * `<state>/extensions/rl-training-headers/` (where OpenClaw discovers plugins) and enables it in
 * `openclaw.json` with the conversation access its `before_prompt_build` hook needs. Optionally
 * adds a provider that points OpenClaw at a turnstream gateway, with a request timeout that fits an
 * agent's first turn on a CPU (`DEFAULT_TIMEOUT_SECONDS`).
 *
 * Idempotent: a second run replaces the plugin's files and leaves the config as the first left
 * it. The rest of the config is kept as it is (an existing provider is never overwritten).
 */
import { copyFile, mkdir, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { ErrorCodes, invalidInput, TurnstreamError } from '../../core/index.ts';

export const PLUGIN_ID = 'rl-training-headers';
/**
 * `timeoutSeconds` of the provider entry the installer adds: OpenClaw's bound on one model request
 * (connect, first chunk, streaming). Without it OpenClaw waits 300 s for the first chunk from a
 * local provider and 120 s from any other. An agent's first turn evaluates OpenClaw's whole
 * prompt (about 7,200 tokens once fitted to SmolLM2's context) before its first token: on a
 * 2-core CPU that takes one to three minutes (docs/openclaw.md has the figures), and over 240 s with other work on the machine, which
 * OpenClaw gave up on. 600 s covers a loaded machine; later turns reuse the evaluated prompt
 * (the gateway's prefix cache) and take seconds.
 */
export const DEFAULT_TIMEOUT_SECONDS = 600;
const PLUGIN_FILES = ['index.ts', 'openclaw.plugin.json', 'package.json'];
const PLUGIN_SOURCE = join(dirname(fileURLToPath(import.meta.url)), PLUGIN_ID);

export interface InstallPluginOptions {
  /** OpenClaw's state directory (`OPENCLAW_STATE_DIR`, usually `~/.openclaw`). */
  stateDir: string;
  /** OpenClaw's config file. @default `<stateDir>/openclaw.json` */
  configPath?: string;
  /** The provider id (under `models.providers`) whose requests get the headers. @default 'turnstream' */
  provider?: string;
  /** @default 'X-Session-Id' */
  sessionIdHeader?: string;
  /** @default 'X-Turn-Type' */
  turnTypeHeader?: string;
  /**
   * A turnstream gateway (`http://host:port`): when the provider is not configured yet, it is added
   * with this base URL, `model` and `apiKey`.
   */
  gateway?: {
    url: string;
    model: string;
    apiKey?: string;
    contextWindow?: number;
    maxTokens?: number;
    /** The provider's `timeoutSeconds` (OpenClaw's bound on one model request). @default DEFAULT_TIMEOUT_SECONDS */
    timeoutSeconds?: number;
  };
}

export interface InstallPluginResult {
  pluginDir: string;
  configPath: string;
  provider: string;
  /** True when the provider entry was added (false: it existed, or no gateway was given). */
  providerAdded: boolean;
}

type Json = Record<string, unknown>;
const isObj = (v: unknown): v is Json => !!v && typeof v === 'object' && !Array.isArray(v);
const child = (parent: Json, key: string): Json => (isObj(parent[key]) ? (parent[key] as Json) : (parent[key] = {}));

async function readConfig(path: string): Promise<Json> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return {};
    throw new TurnstreamError(ErrorCodes.PREREQUISITE, `cannot read ${path}: ${(err as Error).message}`, { cause: err });
  }
  try {
    const parsed: unknown = text.trim() === '' ? {} : JSON.parse(text);
    if (!isObj(parsed)) throw new Error('not an object');
    return parsed;
  } catch (err) {
    throw invalidInput(
      `${path} is not plain JSON (${(err as Error).message}); add the plugin by hand as docs/openclaw.md shows, or pass --config with a JSON file`,
      'config',
      err,
    );
  }
}

/** Adds the plugin (and, with `gateway`, the provider) to a parsed `openclaw.json`. */
export function withPlugin(
  config: Json,
  opts: Omit<InstallPluginOptions, 'stateDir' | 'configPath'>,
): { config: Json; providerAdded: boolean } {
  const provider = opts.provider ?? 'turnstream';
  const plugins = child(config, 'plugins');
  // An allowlist, when there is one, must name the plugin; none is created (it would block others).
  if (Array.isArray(plugins.allow) && !plugins.allow.includes(PLUGIN_ID)) plugins.allow.push(PLUGIN_ID);
  const entry = child(child(plugins, 'entries'), PLUGIN_ID);
  entry.enabled = true;
  child(entry, 'hooks').allowConversationAccess = true;
  Object.assign(child(entry, 'config'), {
    sessionIdHeader: opts.sessionIdHeader ?? 'X-Session-Id',
    turnTypeHeader: opts.turnTypeHeader ?? 'X-Turn-Type',
    providers: [provider],
  });
  if (!opts.gateway) return { config, providerAdded: false };
  const providers = child(child(config, 'models'), 'providers');
  let providerAdded = false;
  if (!isObj(providers[provider])) {
    const g = opts.gateway;
    providers[provider] = {
      baseUrl: `${g.url.replace(/\/+$/, '')}/v1`,
      apiKey: g.apiKey ?? 'unused',
      api: 'openai-completions',
      timeoutSeconds: g.timeoutSeconds ?? DEFAULT_TIMEOUT_SECONDS,
      models: [
        {
          id: g.model,
          name: g.model,
          reasoning: false,
          input: ['text'],
          contextWindow: g.contextWindow ?? 131072,
          maxTokens: g.maxTokens ?? 1024,
        },
      ],
    };
    providerAdded = true;
  }
  return { config, providerAdded };
}

export async function installPlugin(opts: InstallPluginOptions): Promise<InstallPluginResult> {
  const configPath = opts.configPath ?? join(opts.stateDir, 'openclaw.json');
  const { config, providerAdded } = withPlugin(await readConfig(configPath), opts);
  const pluginDir = join(opts.stateDir, 'extensions', PLUGIN_ID);
  try {
    await mkdir(pluginDir, { recursive: true });
    for (const f of PLUGIN_FILES) await copyFile(join(PLUGIN_SOURCE, f), join(pluginDir, f));
    await mkdir(dirname(configPath), { recursive: true });
    // Write-then-rename: OpenClaw never reads a half-written config.
    const tmp = `${configPath}.turnstream-${process.pid}.tmp`;
    await writeFile(tmp, `${JSON.stringify(config, null, 2)}\n`);
    await rename(tmp, configPath);
  } catch (err) {
    throw new TurnstreamError(
      ErrorCodes.PREREQUISITE,
      `cannot install the OpenClaw plugin into ${opts.stateDir}: ${(err as Error).message}`,
      { cause: err },
    );
  }
  return { pluginDir, configPath, provider: opts.provider ?? 'turnstream', providerAdded };
}
