import { Kafka } from './streams/kafkajs.ts';
import { createEventCodecs } from './streams/index.ts';
const prefix = 'gym-mxbmt4g5w07v.';
const codecs = await createEventCodecs({ registryUrl: 'http://127.0.0.1:8081/apis/ccompat/v7', naming: { prefix } });
const k = new Kafka({ brokers: ['127.0.0.1:9092'], logLevel: 0 });
const c = k.consumer({ groupId: 'dbg-' + Date.now(), readUncommitted: false } as never);
await c.connect();
await c.subscribe({ topic: codecs.topic('samples'), fromBeginning: true });
const rows: string[] = [];
await c.run({ eachMessage: async ({ partition, message }) => {
  const s: any = await codecs.of('samples').decode(message.value!);
  rows.push(`p${partition} o${message.offset.padStart(3)} batch=${s.group?.batchId} n=${s.group?.batchSamples} v=${s.policyVersion} sess=${s.sessionId} t=${message.timestamp}`);
}});
await new Promise((r) => setTimeout(r, 8000));
await c.disconnect();
console.log(rows.sort().join('\n'));
process.exit(0);
