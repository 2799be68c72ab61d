/** What a refused call threw: its message, code and param, for one deepEqual against the refusal expected. */
import assert from 'node:assert/strict';

export interface Refusal {
  message: string;
  code: string;
  param: string | undefined;
}

/** The message, code and param of the error `f` throws; the test fails with `accepted` when `f` returns. */
export function refusal(f: () => unknown, accepted = 'accepted'): Refusal {
  try {
    f();
  } catch (err) {
    const e = err as Error & { code: string; param?: string };
    return { message: e.message, code: e.code, param: e.param };
  }
  assert.fail(accepted);
}
