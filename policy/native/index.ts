/** Native TensorFlow for tfjs: the pinned wheels, the build on this machine, the GPU check and the known-result check. */
export * from './tensorflow-dist.ts';
export {
  buildKey,
  ensureNativeTensorflow,
  nativeBuildReady,
  packageFolder,
  type NativeInstall,
  type NativeInstallOptions,
  type NativeInstallProgress,
} from './install-native-tensorflow.ts';
export { detectCudaDevice, type CudaDevice } from './cuda-device.ts';
export { checkBackendResults, type BackendCheck } from './backend-check.ts';
