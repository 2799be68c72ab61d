/** The check on an error that blames a setting: a bad setting is not retried, and names itself. */
import assert from 'node:assert/strict';
import type { TurnstreamError } from '../../core/index.ts';

/** `e` is TS_ERR_INVALID_INPUT, not retriable, with `param` and exactly `message`. */
export function assertSettingError(e: TurnstreamError | undefined, param: string, message: string): void {
  assert.equal(e?.code, 'TS_ERR_INVALID_INPUT');
  assert.equal(e?.retriable, false);
  assert.equal(e?.param, param);
  assert.equal(e?.message, message);
}
