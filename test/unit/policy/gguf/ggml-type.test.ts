import assert from 'node:assert/strict';
import { test } from 'node:test';
import { byGgmlType, GgmlType } from '../../../../policy/gguf/ggml-type.ts';
import { canDequantize } from '../../../../policy/gguf/dequantize.ts';
import { canQuantize } from '../../../../policy/gguf/quantize.ts';
import { TurnstreamError } from '../../../../core/errors.ts';

test('byGgmlType keys a table by type id, reading names in any case', () => {
  assert.deepEqual(byGgmlType({ f32: 'a', bf16: 'b', q4_K: 'c', Q8_0: 'd' }), {
    [GgmlType.F32]: 'a',
    [GgmlType.BF16]: 'b',
    [GgmlType.Q4_K]: 'c',
    [GgmlType.Q8_0]: 'd',
  });
  assert.throws(
    () => byGgmlType({ q9_9: 1 }),
    (e: unknown) => e instanceof TurnstreamError && /unknown ggml type name q9_9/.test(e.message),
  );
});

test('the codec tables built with it cover the same thirteen types both ways', () => {
  const both = ['F32', 'F16', 'BF16', 'Q4_0', 'Q4_1', 'Q5_0', 'Q5_1', 'Q8_0', 'Q2_K', 'Q3_K', 'Q4_K', 'Q5_K', 'Q6_K'] as const;
  for (const name of both) {
    assert.equal(canDequantize(GgmlType[name]), true, name);
    assert.equal(canQuantize(GgmlType[name]), true, name);
  }
  for (const name of ['Q8_1', 'Q8_K', 'I8', 'F64'] as const) {
    assert.equal(canDequantize(GgmlType[name]), false, name);
    assert.equal(canQuantize(GgmlType[name]), false, name);
  }
});
