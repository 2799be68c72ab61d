#!/usr/bin/env node
// The `turnstream` command. Sources are TypeScript, run through tsx's loader so a clone
// works right after `npm install` with no build step.
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../cli/main.ts');
await main(process.argv);
