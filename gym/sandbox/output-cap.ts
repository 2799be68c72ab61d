/**
 * A command's stdout and stderr, kept up to one limit for both together while they stream:
 * the bytes past the limit are dropped as they arrive, so the parent never holds more than the
 * limit however much the command writes.
 */
export type OutputStream = 'stdout' | 'stderr';

export class OutputCap {
  private readonly chunks: Record<OutputStream, Buffer[]> = { stdout: [], stderr: [] };
  private kept = 0;
  private cut = false;

  /** @param limit bytes kept, stdout and stderr together */
  constructor(readonly limit: number) {}

  /** Keeps what fits of a chunk; false once the limit has been passed (the caller stops the command). */
  push(stream: OutputStream, chunk: Buffer): boolean {
    if (this.cut) return false;
    const room = this.limit - this.kept;
    if (chunk.length > room) {
      if (room > 0) this.chunks[stream].push(Buffer.from(chunk.subarray(0, room)));
      this.kept = this.limit;
      this.cut = true;
      return false;
    }
    this.chunks[stream].push(chunk);
    this.kept += chunk.length;
    return true;
  }

  /** Output was dropped. */
  get truncated(): boolean {
    return this.cut;
  }

  /** Bytes held, both streams together (never more than the limit). */
  get bytes(): number {
    return this.kept;
  }

  /** One stream as UTF-8 (a character cut at the limit reads as U+FFFD). */
  text(stream: OutputStream): string {
    return Buffer.concat(this.chunks[stream]).toString('utf8');
  }
}
