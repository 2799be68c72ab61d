export {
  DEFAULT_TIMEOUT_SECONDS,
  installPlugin,
  PLUGIN_ID,
  withPlugin,
  type InstallPluginOptions,
  type InstallPluginResult,
} from './install-plugin.ts';
export {
  defaultOpenClawDir,
  ensureOpenClaw,
  NODE24_VERSION,
  OPENCLAW_VERSION,
  type EnsureOpenClawOptions,
  type OpenClawInstall,
} from './ensure-openclaw.ts';
