/**
 * What tfjs-node's binding takes out of the TensorFlow wheel (tensorflow-dist.ts): the C API
 * libraries it links against and the C headers it compiles with; nothing else is extracted.
 */

/** Members of the TensorFlow wheel the binding links against, and the names it links them as. */
export const TENSORFLOW_LIBRARIES = [
  { member: 'tensorflow/libtensorflow_cc.so.2', file: 'libtensorflow_cc.so.2', link: 'libtensorflow.so' },
  { member: 'tensorflow/libtensorflow_framework.so.2', file: 'libtensorflow_framework.so.2', link: 'libtensorflow_framework.so' },
] as const;

/** Root of the C headers inside the TensorFlow wheel. */
export const HEADER_ROOT = 'tensorflow/include/';

/**
 * The headers the binding's sources include, with everything they include in turn (computed on
 * the 2.16.1 wheel from the binding's `#include`s; `tensorflow/core/platform/ctstring_internal.h`
 * is included by tfjs_backend.cc itself).
 */
export const BINDING_HEADERS = [
  'tensorflow/c/c_api.h',
  'tensorflow/c/c_api_macros.h',
  'tensorflow/c/eager/c_api.h',
  'tensorflow/c/tf_attrtype.h',
  'tensorflow/c/tf_buffer.h',
  'tensorflow/c/tf_datatype.h',
  'tensorflow/c/tf_status.h',
  'tensorflow/c/tf_tensor.h',
  'tensorflow/c/tf_tstring.h',
  'tensorflow/core/platform/ctstring.h',
  'tensorflow/core/platform/ctstring_internal.h',
  'tsl/c/tsl_status.h',
  'tsl/platform/ctstring.h',
  'tsl/platform/ctstring_internal.h',
] as const;
