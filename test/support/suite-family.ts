/** A topic family (test/integration/processors/support.ts) for the tests of the enclosing suite: made before them, closed after them. */
import { after, before } from 'node:test';
import { family, type Family } from '../integration/processors/support.ts';

/** Registers the suite's hooks; call the result for the family (there is none before the suite's `before` hooks have run). */
export function suiteFamily(name: string): () => Family {
  let f: Family | undefined;
  before(async () => {
    f = await family(name);
  });
  after(async () => {
    await f?.close();
  });
  return () => {
    if (f === undefined) throw new Error(`the topic family ${name} is made in a before hook; ask for it in a test or a later hook`);
    return f;
  };
}
