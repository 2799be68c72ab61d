/**
 * The error catalogue (docs/design/style.md): every code has an HTTP status, a line in the error
 * table of docs/operations.md (with that status), and its default retriability; an error with one
 * answers in OpenAI's shape.
 */
import assert from 'node:assert/strict';
import { readFileSync } from 'node:fs';
import { test } from 'node:test';
import { STATUS, toOpenAIError } from '../../../gateway/openai-errors.ts';
import { ErrorCodes, isRetriable, TurnstreamError } from '../../../core/errors.ts';
import { REPO_ROOT } from '../../support/stack.ts';

const operations = readFileSync(`${REPO_ROOT}docs/operations.md`, 'utf8');

test('every code has a status and a line in docs/operations.md naming that status', () => {
  for (const code of Object.values(ErrorCodes)) {
    const status = STATUS[code];
    assert.ok(status >= 400 && status < 600, `${code} has an HTTP status`);
    assert.match(operations, new RegExp(`\\| \`${code}\` +\\| ${status} +\\| \\S`), `${code} is documented with ${status}`);
    const { status: s, body } = toOpenAIError(new TurnstreamError(code, `a ${code}`, { param: 'p' }));
    assert.equal(s, status);
    assert.deepEqual([body.error.code, body.error.param, body.error.message], [code, 'p', `a ${code}`]);
    assert.equal(typeof body.error.type, 'string');
  }
});

test('which codes are retried by default', () => {
  const retried = Object.values(ErrorCodes).filter((c) => isRetriable(new TurnstreamError(c, 'x')));
  assert.deepEqual(retried.sort(), ['TS_ERR_OVERLOADED', 'TS_ERR_TIMEOUT', 'TS_ERR_UNAVAILABLE', 'TS_ERR_UPSTREAM']);
  assert.equal(isRetriable(new TurnstreamError(ErrorCodes.UNAVAILABLE, 'x', { retriable: false })), false, 'overridable');
});
