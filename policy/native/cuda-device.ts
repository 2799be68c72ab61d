/** Whether this machine has an NVIDIA GPU with its driver loaded, read from the driver's files (no CUDA library is loaded). */
import { existsSync, readdirSync } from 'node:fs';

/** What was found, and how. */
export interface CudaDevice {
  present: boolean;
  /** How it was told: the driver's GPU list, or why none. */
  detail: string;
}

/** Looks for the NVIDIA driver's GPU entries (`/proc/driver/nvidia/gpus/*`) and device nodes. */
export function detectCudaDevice(procRoot = '/proc', devRoot = '/dev'): CudaDevice {
  let gpus: string[] = [];
  try {
    gpus = readdirSync(`${procRoot}/driver/nvidia/gpus`);
  } catch {
    // no NVIDIA driver loaded
  }
  if (gpus.length > 0) return { present: true, detail: `${gpus.length} NVIDIA GPU(s) (${procRoot}/driver/nvidia/gpus)` };
  if (existsSync(`${devRoot}/nvidia0`)) return { present: true, detail: `${devRoot}/nvidia0` };
  return { present: false, detail: 'no NVIDIA driver or device node' };
}
