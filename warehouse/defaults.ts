/**
 * Where the analytics tables live when nothing is set (options.ts), loadable
 * without the store's client: reading the configuration (cli/config.ts, through
 * stack/settings.ts) does not load ClickHouse's.
 */
export { ANALYTICS_DEFAULTS } from './options.ts';
