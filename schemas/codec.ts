/**
 * Typed Avro codec for one topic's values, in the Confluent wire format (magic byte 0,
 * 4-byte schema id, Avro body).
 *
 * Records written with this process's own schema id are encoded and decoded directly with a
 * cached avsc type. Any other writer schema id (an older or newer version of the schema, a
 * foreign producer) is resolved through @confluentinc/schemaregistry: the writer schema is
 * fetched once by id and read into the current reader schema with avsc's resolver, so
 * BACKWARD-compatible evolution reads old records with the new defaults. The direct path
 * exists because the generic deserializer cost ~245 µs a record here, 8× the avsc decode.
 */
import type { Client } from '@confluentinc/schemaregistry';
import avro from 'avsc';
import { ErrorCodes, TurnstreamError } from '../core/index.ts';
import { TOPICS, valueSubject, type TopicId } from './topics.ts';
import { registryReady, securityOf } from './registry.ts';

export interface Codec<T> {
  readonly topic: string;
  encode(value: T): Promise<Buffer>;
  /** `encode` without a promise (encoding never needs the registry). */
  encodeNow(value: T): Buffer;
  decode(bytes: Buffer): Promise<T>;
  /**
   * `decode` without a promise where no registry lookup is needed (the writer schema is this
   * process's own or was resolved before); `undefined` where one is. Throws as `decode` does
   * for a record that cannot be read. For loops that would otherwise await every record.
   */
  decodeNow(bytes: Buffer): T | undefined;
}

/** Paths of the fields that make `value` invalid for `type`, for a readable error. */
export function invalidPaths(type: avro.Type, value: unknown): string[] {
  const paths: string[] = [];
  type.isValid(value, {
    errorHook: (path: string[], v: unknown) => {
      paths.push(`${path.join('.') || '(root)'}=${JSON.stringify(v)?.slice(0, 60)}`);
    },
  });
  return paths;
}

const avroTypes = new Map<TopicId, avro.Type>();
/** The avsc Type of a topic's value schema (cached). */
export function avroTypeOf(id: TopicId): avro.Type {
  let t = avroTypes.get(id);
  if (!t) {
    t = avro.Type.forSchema(TOPICS[id].schema() as avro.Schema);
    avroTypes.set(id, t);
  }
  return t;
}

/** Bytes of `value` as a record value of topic `id`: the wire header (5) plus its Avro body. */
export function encodedSize(id: TopicId, value: unknown): number {
  return 5 + avroTypeOf(id).toBuffer(value).length;
}

const MAGIC = 0;

export class AvroCodec<T> implements Codec<T> {
  readonly topic: string;
  private readonly id: TopicId;
  private readonly client: Client;
  private readonly schemaId: number;
  private readonly type: avro.Type;
  private readonly header: Buffer;
  /** The wire header, then room for one encoded value (grown as needed). */
  private scratch: Buffer;
  /** Resolvers from other writer schema ids into our reader schema. */
  private readonly resolvers = new Map<number, Promise<avro.Resolver>>();
  /** The same, once resolved: read without awaiting. */
  private readonly resolved = new Map<number, avro.Resolver>();

  /** `schemaId` is the id returned by registerSchemas for this topic. */
  constructor(client: Client, id: TopicId, topic: string, schemaId: number) {
    this.id = id;
    this.topic = topic;
    this.client = client;
    this.schemaId = schemaId;
    this.type = avroTypeOf(id);
    this.header = Buffer.alloc(5);
    this.header.writeUInt8(MAGIC, 0);
    this.header.writeInt32BE(schemaId, 1);
    this.scratch = Buffer.alloc(4096);
    this.header.copy(this.scratch);
  }

  async encode(value: T): Promise<Buffer> {
    return this.encodeNow(value);
  }

  /** `encode` without a promise. */
  encodeNow(value: T): Buffer {
    // avsc's writer refuses what does not fit the schema as it writes (a missing field, a wrong
    // type, an unknown symbol): the separate validation pass runs only to explain a refusal.
    // Written behind the header in a scratch buffer, then copied once into a buffer of its size.
    let end: number;
    try {
      while ((end = this.type.encode(value, this.scratch, 5)) < 0) {
        const grown = Buffer.allocUnsafe(2 * (this.scratch.length - end));
        this.header.copy(grown);
        this.scratch = grown;
      }
    } catch {
      const paths = invalidPaths(this.type, value);
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `invalid ${TOPICS[this.id].base} value: ${paths.slice(0, 5).join(', ')}`);
    }
    return Buffer.from(this.scratch.subarray(0, end));
  }

  async decode(bytes: Buffer): Promise<T> {
    const now = this.decodeNow(bytes);
    if (now !== undefined) return now;
    try {
      return this.type.fromBuffer(bytes.subarray(5), await this.resolverFor(bytes.readInt32BE(1))) as T;
    } catch (err) {
      throw this.decodeError(err);
    }
  }

  decodeNow(bytes: Buffer): T | undefined {
    try {
      if (bytes.length < 5 || bytes.readUInt8(0) !== MAGIC)
        throw new Error(`unknown magic byte (${bytes.length ? bytes.readUInt8(0) : 'empty record'})`);
      const writerId = bytes.readInt32BE(1);
      if (writerId === this.schemaId) return this.type.fromBuffer(bytes.subarray(5)) as T;
      const resolver = this.resolved.get(writerId);
      return resolver ? (this.type.fromBuffer(bytes.subarray(5), resolver) as T) : undefined;
    } catch (err) {
      throw this.decodeError(err);
    }
  }

  private decodeError(err: unknown): TurnstreamError {
    if (err instanceof TurnstreamError) return err;
    return new TurnstreamError(ErrorCodes.DECODE, `cannot decode a ${TOPICS[this.id].base} record: ${(err as Error).message}`, {
      cause: err,
      retriable: false,
    });
  }

  private resolverFor(writerId: number): Promise<avro.Resolver> {
    let r = this.resolvers.get(writerId);
    if (!r) {
      r = this.client.getBySubjectAndId(valueSubject(this.topic), writerId).then(
        (info) => {
          const writer = avro.Type.forSchema(JSON.parse(info.schema) as avro.Schema);
          const resolver = this.type.createResolver(writer);
          this.resolved.set(writerId, resolver);
          return resolver;
        },
        async (err: unknown) => {
          // The registry said the id does not exist: the record is undecodable, unless the
          // registry is not ready (reading its storage back after a restart, when it answers 404
          // for ids it has not read yet). Anything else (registry down, a 5xx) is transient, and
          // the record is retried, not dead-lettered.
          const status = (err as { status?: number }).status;
          const url = this.client.config().baseURLs[0];
          // 401/403: the registry refused this client (a rotated password), not the record.
          const refused = status === 401 || status === 403;
          if (
            status !== undefined &&
            status >= 400 &&
            status < 500 &&
            !refused &&
            (!url || (await registryReady(url, undefined, securityOf(this.client))))
          ) {
            throw new TurnstreamError(
              ErrorCodes.DECODE,
              `cannot decode a ${TOPICS[this.id].base} record: writer schema ${writerId}: ${(err as Error).message}`,
              {
                cause: err,
                retriable: false,
              },
            );
          }
          throw new TurnstreamError(
            ErrorCodes.UNAVAILABLE,
            `schema registry unavailable while resolving writer schema ${writerId}: ${(err as Error).message}`,
            {
              cause: err,
            },
          );
        },
      );
      // A failed lookup (registry down) is retried on the next record, not cached.
      r.catch(() => this.resolvers.delete(writerId));
      this.resolvers.set(writerId, r);
    }
    return r;
  }
}
