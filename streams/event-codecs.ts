/** The codecs of one topic family (a prefix and maybe a replay tag), schemas registered. */
import type { Client } from '@confluentinc/schemaregistry';
import {
  AvroCodec,
  createRegistryClient,
  registerSchemas,
  TOPICS,
  topicName,
  type BatchState,
  type Codec,
  type DeadLetter,
  type DeadLetterReplay,
  type Feedback,
  type Judgement,
  type Reward,
  type Sample,
  type SessionState,
  type TopicId,
  type TopicNaming,
  type Trajectory,
  type TrajectoryState,
  type Turn,
  type TurnPair,
  type WeightChunk,
  type WeightVersion,
  type RegistrySecurity,
} from '../schemas/index.ts';

/** The value type of each topic. */
export interface TopicValues {
  turns: Turn;
  feedback: Feedback;
  sessionState: SessionState;
  pairs: TurnPair;
  judgements: Judgement;
  samples: Sample;
  weights: WeightVersion;
  weightBlobs: WeightChunk;
  rewards: Reward;
  trajectoryState: TrajectoryState;
  trajectories: Trajectory;
  batchState: BatchState;
  dlq: DeadLetter;
  dlqReplays: DeadLetterReplay;
}

export interface EventCodecsOptions {
  /** Confluent-compatible registry URL. */
  registryUrl: string;
  /** Basic auth and TLS trust of the registry (SCHEMA_REGISTRY_USERNAME, …). @default none */
  registrySecurity?: RegistrySecurity;
  naming?: TopicNaming;
}

export class EventCodecs {
  readonly naming: TopicNaming;
  readonly client: Client;
  private readonly codecs: Map<TopicId, Codec<unknown>>;
  private readonly byTopic: Map<string, TopicId>;

  private constructor(client: Client, naming: TopicNaming, codecs: Map<TopicId, Codec<unknown>>) {
    this.client = client;
    this.naming = naming;
    this.codecs = codecs;
    this.byTopic = new Map([...codecs.entries()].map(([id, c]) => [c.topic, id]));
  }

  /** Registers every topic's schema and builds its codec. */
  static async create(options: EventCodecsOptions): Promise<EventCodecs> {
    const client = createRegistryClient({ url: options.registryUrl, security: options.registrySecurity });
    const naming = options.naming ?? {};
    const ids = await registerSchemas(client, naming);
    const codecs = new Map<TopicId, Codec<unknown>>();
    for (const id of Object.keys(TOPICS) as TopicId[]) {
      codecs.set(id, new AvroCodec(client, id, topicName(id, naming), ids[id] as number));
    }
    return new EventCodecs(client, naming, codecs);
  }

  of<K extends TopicId>(id: K): Codec<TopicValues[K]> {
    return this.codecs.get(id) as Codec<TopicValues[K]>;
  }

  topic(id: TopicId): string {
    return this.of(id).topic;
  }

  /** Which topic id a physical topic name belongs to. */
  idOf(topic: string): TopicId | undefined {
    return this.byTopic.get(topic);
  }

  /** The same registry, another topic family (for example a replay tag). */
  async withNaming(naming: TopicNaming): Promise<EventCodecs> {
    const ids = await registerSchemas(this.client, naming);
    const codecs = new Map<TopicId, Codec<unknown>>();
    for (const id of Object.keys(TOPICS) as TopicId[])
      codecs.set(id, new AvroCodec(this.client, id, topicName(id, naming), ids[id] as number));
    return new EventCodecs(this.client, naming, codecs);
  }
}

export const createEventCodecs = (options: EventCodecsOptions): Promise<EventCodecs> => EventCodecs.create(options);
