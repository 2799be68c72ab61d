import assert from 'node:assert/strict';
import { describe, it } from 'node:test';
import { GatewayMetrics } from '../../../gateway/metrics.ts';
import { SessionIndex } from '../../../gateway/session-index.ts';
import { TurnCapture } from '../../../gateway/turn-capture.ts';
import { createLogger } from '../../../core/logger.ts';
import type { Outbox } from '../../../streams/outbox.ts';
import { exampleTurn } from '../../support/fixtures.ts';

/** An outbox whose appends land when the test says so (the bound's logic, not the disk). */
function heldOutbox(): { outbox: Outbox; landed: string[]; release: () => void } {
  const landed: string[] = [];
  let release!: () => void;
  const gate = new Promise<void>((r) => (release = r));
  const outbox = {
    depth: 0,
    append: async (_topic: string, key: string) => {
      await gate;
      landed.push(key);
      return 1;
    },
  } as unknown as Outbox;
  return { outbox, landed, release };
}

function capture(outbox: Outbox, boundMs?: number): TurnCapture {
  return new TurnCapture({
    outbox,
    index: new SessionIndex(),
    metrics: new GatewayMetrics('test'),
    logger: createLogger('test', 'silent'),
    boundMs,
  });
}

describe('TurnCapture', () => {
  it('answers only once the append landed while it is within the bound (the default waits a second)', async (t) => {
    // The clock is the test's: a hair under the default bound passes at once, with no real wait.
    t.mock.timers.enable({ apis: ['setTimeout'] });
    const { outbox, landed, release } = heldOutbox();
    const c = capture(outbox);
    let answered = false;
    const call = c.capture(exampleTurn({ sessionId: 's-wait' })).then(() => (answered = true));
    await new Promise(setImmediate); // the capture has started its bound
    t.mock.timers.tick(999);
    await new Promise(setImmediate);
    assert.equal(answered, false, 'still waiting for the append 999 ms in');
    release();
    await call;
    assert.deepEqual(landed, ['s-wait'], 'answered after the append landed');
  });

  it('answers past the bound, and shutdown still waits for the append', async () => {
    const { outbox, landed, release } = heldOutbox();
    const c = capture(outbox, 20);
    await c.capture(exampleTurn({ sessionId: 's-slow' }));
    assert.deepEqual(landed, [], 'answered before the append landed');
    const settled = c.settle();
    release();
    await settled;
    assert.deepEqual(landed, ['s-slow']);
  });
});
