/**
 * A gateway (built-in tiny model, default body limit) in a process of its own, for tests that
 * read its RSS: prints `listening <url>`, stops when its stdin closes (the test ended or died).
 */
import { startGateway, tempHome } from '../../integration/gateway/support.ts';

const home = await tempHome('child');
const g = await startGateway({ home: home.dir });
process.stdout.write(`listening ${g.url}\n`);
process.stdin.resume();
process.stdin.once('close', () => {
  void g.gw
    .stop()
    .finally(() => home.cleanup())
    .finally(() => process.exit(0));
});
