export { installPlugin, PLUGIN_ID, withPlugin, type InstallPluginOptions, type InstallPluginResult } from './install-plugin.ts';
