/** A replay's progress, stage by stage, as its transactions commit (`onProgress`). */
import type { ReplayProgress } from './replay-options.ts';

export class ReplayProgressCounter {
  /** Records of the range read (and committed). */
  read: number;
  pairs = 0;
  judged = 0;
  built = 0;

  /**
   * @param total records in the range
   * @param alreadyRead those of the partitions an earlier run finished
   */
  constructor(
    private readonly total: number,
    alreadyRead: number,
    private readonly onProgress?: (p: ReplayProgress) => void,
  ) {
    this.read = alreadyRead;
  }

  /** One committed transaction: `read` records of the range, `pairs` pairs, `judged` judgements, `built` samples built. */
  add(read: number, pairs: number, judged: number, built: number): void {
    this.read += read;
    this.pairs += pairs;
    this.judged += judged;
    this.built += built;
  }

  report(finished: boolean): void {
    this.onProgress?.({
      stages: [
        { stage: 'session-assembler', consumed: this.read, total: this.total, done: finished },
        { stage: 'judge', consumed: this.judged, total: this.pairs, done: finished },
        { stage: 'sample-builder', consumed: this.built, total: this.judged, done: finished },
      ],
    });
  }
}
