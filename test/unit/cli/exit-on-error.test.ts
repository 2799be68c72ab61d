import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { describe, it } from 'node:test';
import { REPO_ROOT } from '../../support/stack.ts';

describe('endAtOnceOnSignals', () => {
  it('leaves no SIGINT or SIGTERM hook behind, though loading the eval command (node-llama-cpp) installs one', () => {
    // In a child: the hooks are process-wide, and this runner has its own.
    const script = `
      await import('./cli/commands/eval.ts');
      const before = process.listenerCount('SIGINT') + process.listenerCount('SIGTERM');
      const { endAtOnceOnSignals } = await import('./cli/exit-on-error.ts');
      endAtOnceOnSignals();
      console.log(JSON.stringify([before, process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]));`;
    const r = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], { cwd: REPO_ROOT, encoding: 'utf8' });
    assert.equal(r.status, 0, r.stderr);
    const [before, sigint, sigterm] = JSON.parse(r.stdout.trim().split('\n').at(-1)!) as number[];
    assert.ok(before > 0, 'the command hooks the signals on load');
    assert.deepEqual([sigint, sigterm], [0, 0]);
  });
});
