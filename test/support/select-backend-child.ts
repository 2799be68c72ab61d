/**
 * A fresh process that selects the tfjs backend once, as a service starting up does: argv[2] is
 * JSON `{ preferred?, native? }` (the options of selectBackendStatus). Warnings go to stderr as
 * the one line a user sees; the status is printed as JSON on stdout.
 */
import { selectBackendStatus, type BackendPreference, type NativeTensorflowOptions } from '../../policy/index.ts';

const { preferred, native } = JSON.parse(process.argv[2] ?? '{}') as { preferred?: BackendPreference; native?: NativeTensorflowOptions };
const status = await selectBackendStatus(preferred, {
  native,
  logger: { info: () => undefined, debug: () => undefined, warn: (_o: unknown, line?: string) => process.stderr.write(`${line}\n`) },
});
process.stdout.write(JSON.stringify(status) + '\n');
