// `node --import ./test/support/record-loads.mjs …`: appends the URL of every module the process
// loads (through the ESM loader: its own files and the packages it imports) to $RECORD_LOADS_FILE,
// one a line, as it is loaded.
import { register } from 'node:module';

const hooks = `
import { appendFileSync } from 'node:fs';
let file;
export function initialize(data) { file = data.file; }
export async function load(url, context, next) {
  appendFileSync(file, url + '\\n');
  return next(url, context);
}
`;
register(`data:text/javascript,${encodeURIComponent(hooks)}`, { data: { file: process.env.RECORD_LOADS_FILE } });
