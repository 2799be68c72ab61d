/** Builds the DeadLetter event for a record a stage could not decode or process. */
import type { DeadLetter } from '../schemas/index.ts';
import { toTurnstreamError } from '../core/index.ts';

export interface FailedRecord {
  topic: string;
  partition: number;
  offset: string;
  key: Buffer | null;
  value: Buffer | null;
}

export function deadLetter(record: FailedRecord, err: unknown, stage: string, attempts: number, now = Date.now()): DeadLetter {
  const e = toTurnstreamError(err);
  return {
    topic: record.topic,
    partition: record.partition,
    offset: record.offset,
    key: record.key,
    value: record.value,
    code: e.code,
    message: e.message.slice(0, 4000),
    stage,
    failedAt: now,
    attempts,
  };
}
