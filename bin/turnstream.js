#!/usr/bin/env node
// The `turnstream` command. Sources are TypeScript, run through tsx's loader so a clone
// works right after `npm install` with no build step.
// Every turnstream producer sets its partitioner explicitly (streams/producer.ts).
process.env.KAFKAJS_NO_PARTITIONER_WARNING ??= '1';
import { register } from 'tsx/esm/api';
register();
const { main } = await import('../cli/main.ts');
await main(process.argv);
