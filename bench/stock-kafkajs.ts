/**
 * kafkajs as npm ships it, beside the copy that streams/kafkajs.ts loads with its hot paths
 * replaced: a second, separate load of every kafkajs module. The benches measure their raw
 * baselines on both, so the replacements' effect is a figure of the same run.
 */
import { createRequire } from 'node:module';
import { dirname, sep } from 'node:path';
import type * as KafkaJs from 'kafkajs';
import { kafkaConfig, type KafkaClientOptions } from '../streams/index.ts';

const require = createRequire(import.meta.url);
let stock: typeof KafkaJs | undefined;

function load(): typeof KafkaJs {
  const root = dirname(require.resolve('kafkajs/package.json')) + sep;
  const inKafkajs = (path: string) => path.startsWith(root);
  const tuned = Object.entries(require.cache).filter(([path]) => inKafkajs(path));
  for (const [path] of tuned) delete require.cache[path];
  try {
    return require('kafkajs') as typeof KafkaJs;
  } finally {
    for (const path of Object.keys(require.cache)) if (inKafkajs(path)) delete require.cache[path];
    for (const [path, module] of tuned) require.cache[path] = module;
  }
}

/** A client of stock kafkajs with the options turnstream's own clients get, and its default partitioner. */
export function stockKafka(options: KafkaClientOptions): { kafka: KafkaJs.Kafka; partitioner: KafkaJs.ICustomPartitioner } {
  stock ??= load();
  return { kafka: new stock.Kafka(kafkaConfig(options)), partitioner: stock.Partitioners.DefaultPartitioner };
}
