/** Client-side pieces (the OpenClaw plugin and its installer): what the CLI and the gym may use. */
export * from './openclaw/index.ts';
