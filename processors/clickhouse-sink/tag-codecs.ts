/**
 * Codecs of each topic family the sink reads: its own (given), and those of each replay tag,
 * built (and their schemas registered) on first use. A record decodes without an await when its
 * family's codecs are built and know its writer schema.
 */
import type { EventCodecs } from '../../streams/index.ts';
import { ErrorCodes, TurnstreamError } from '../../core/index.ts';

export class TagCodecs {
  private readonly prefix: string;
  private readonly familyTag: string;
  /** Being built or built. */
  private readonly building = new Map<string, Promise<EventCodecs>>();
  /** Built. */
  private readonly built: Map<string, EventCodecs>;

  constructor(private readonly codecs: EventCodecs) {
    this.prefix = codecs.naming.prefix ?? '';
    this.familyTag = codecs.naming.tag ?? '';
    this.built = new Map([[this.familyTag, codecs]]);
  }

  /** The tag's codecs if they are built. */
  ready(tag: string): EventCodecs | undefined {
    return this.built.get(tag);
  }

  /** The tag's codecs, built now if need be; the registry being away is TS_ERR_UNAVAILABLE (retriable). */
  async of(tag: string): Promise<EventCodecs> {
    if (tag === this.familyTag) return this.codecs;
    let c = this.building.get(tag);
    if (!c) {
      c = this.codecs.withNaming({ prefix: this.prefix, tag });
      this.building.set(tag, c);
      c.then(
        (built) => void this.built.set(tag, built),
        () => this.building.delete(tag),
      );
    }
    try {
      return await c;
    } catch (err) {
      // The registry, not the record: retry the batch.
      throw new TurnstreamError(ErrorCodes.UNAVAILABLE, `codecs of replay "${tag}" unavailable: ${(err as Error).message}`, { cause: err });
    }
  }
}
