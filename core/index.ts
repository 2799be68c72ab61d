export * from './errors.ts';
export { createLogger, setLogFd, type Logger } from './logger.ts';
export { registry as metricsRegistry, counter, gauge, histogram, type Counter, type LabelValues } from './metrics.ts';
export { mulberry32 } from './random.ts';
export { retry, type RetryOptions } from './retry.ts';
export { aptInstall, canUseApt, findExecutable, runCommand, type Runner } from './system-packages.ts';
export { withFileLock, type FileLockOptions } from './file-lock.ts';
