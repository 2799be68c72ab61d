import assert from 'node:assert/strict';
import { test } from 'node:test';
import { withDefaults } from '../../../core/with-defaults.ts';

interface Options {
  size?: number;
  name?: string;
  on?: boolean;
}
const DEFAULTS: Readonly<Required<Options>> = Object.freeze({ size: 4, name: 'a', on: true });

test('withDefaults takes each option given and the default for the rest, as ?? does (null is missing, 0/false/"" are values)', () => {
  assert.deepEqual(withDefaults(DEFAULTS, {}), { size: 4, name: 'a', on: true });
  assert.deepEqual(withDefaults(DEFAULTS, { size: 0, name: '', on: false }), {
    size: 0,
    name: '',
    on: false,
  });
  assert.deepEqual(withDefaults(DEFAULTS, { size: undefined, name: null }), { size: 4, name: 'a', on: true });
});

test('withDefaults leaves out options the defaults do not name, and does not touch the defaults', () => {
  const options = { size: 9, extra: 'x' };
  const out = withDefaults(DEFAULTS, options);
  assert.deepEqual(out, { size: 9, name: 'a', on: true });
  assert.equal('extra' in out, false);
  assert.deepEqual(DEFAULTS, { size: 4, name: 'a', on: true });
});
