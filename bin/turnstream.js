#!/usr/bin/env node
// The `turnstream` command. It runs the compiled code in dist/ (`npm run build`; `npm install`
// builds it). In a checkout whose dist/ is missing, or older than a source file (bin/sources.js
// says which), it runs the TypeScript sources through tsx instead: slower to start, but an edit
// takes effect without a build. An installed package has no sources and always runs dist/.
// Every turnstream producer sets its partitioner explicitly (streams/producer.ts).
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';
import { existsSync } from 'node:fs';

const checkout = existsSync(new URL('../tsconfig.build.json', import.meta.url));
let current = !checkout;
if (checkout) {
  const { distIsCurrent } = await import('./sources.js');
  current = distIsCurrent();
  if (!current && process.stderr.isTTY && existsSync(new URL('../dist', import.meta.url)))
    process.stderr.write('turnstream: dist/ is older than the sources; running them through tsx (npm run build: a fast start)\n');
}
let main;
if (current) ({ main } = await import('../dist/cli/main.js'));
else {
  const { register } = await import('tsx/esm/api');
  register();
  ({ main } = await import('../cli/main.ts'));
}
await main(process.argv);
