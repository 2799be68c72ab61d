/** Writes schemas/avsc/<topic-base>.avsc from ./avro.ts (`npm run schemas:write`). */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { TOPICS } from './topics.ts';

export function renderAvsc(): Map<string, string> {
  const files = new Map<string, string>();
  for (const spec of Object.values(TOPICS)) files.set(`${spec.base}.avsc`, `${JSON.stringify(spec.schema(), null, 2)}\n`);
  return files;
}

if (import.meta.url === `file://${process.argv[1]}`) {
  const dir = join(import.meta.dirname, 'avsc');
  for (const [name, text] of renderAvsc()) writeFileSync(join(dir, name), text);
}
