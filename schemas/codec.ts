/**
 * Typed Avro codec for one topic's values, in the Confluent wire format (magic byte,
 * schema id, Avro body), through @confluentinc/schemaregistry's serdes.
 */
import { AvroDeserializer, AvroSerializer, SerdeType, type Client } from '@confluentinc/schemaregistry';
import avro from 'avsc';
import { ErrorCodes, TurnstreamError } from '../streams/errors.ts';
import { TOPICS, type TopicId } from './topics.ts';

export interface Codec<T> {
  readonly topic: string;
  encode(value: T): Promise<Buffer>;
  decode(bytes: Buffer): Promise<T>;
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

export class AvroCodec<T> implements Codec<T> {
  readonly topic: string;
  private readonly id: TopicId;
  private readonly serializer: AvroSerializer;
  private readonly deserializer: AvroDeserializer;

  /** `schemaId` is the id returned by registerSchemas for this topic. */
  constructor(client: Client, id: TopicId, topic: string, schemaId: number) {
    this.id = id;
    this.topic = topic;
    this.serializer = new AvroSerializer(client, SerdeType.VALUE, { useSchemaId: schemaId, autoRegisterSchemas: false });
    this.deserializer = new AvroDeserializer(client, SerdeType.VALUE, {});
  }

  async encode(value: T): Promise<Buffer> {
    const paths = invalidPaths(avroTypeOf(this.id), value);
    if (paths.length > 0) {
      throw new TurnstreamError(ErrorCodes.INVALID_INPUT, `invalid ${TOPICS[this.id].base} value: ${paths.slice(0, 5).join(', ')}`);
    }
    return this.serializer.serialize(this.topic, value);
  }

  async decode(bytes: Buffer): Promise<T> {
    try {
      return (await this.deserializer.deserialize(this.topic, bytes)) as T;
    } catch (err) {
      throw new TurnstreamError(ErrorCodes.DECODE, `cannot decode a ${TOPICS[this.id].base} record: ${(err as Error).message}`, {
        cause: err,
        retriable: false,
      });
    }
  }
}
