/**
 * Which topics the sink reads and what each holds: the family's own topics (live, unless its
 * codecs carry a tag) and, with `replayTags`, the tagged topics of replays, each with its topic
 * id and the tag its rows carry (`replay_tag`).
 */
import type { TopicId } from '../../schemas/index.ts';
import type { EventCodecs } from '../../streams/index.ts';
import { isDerived, ReplayTopics, type ReplayTopic } from './replay-topics.ts';

export class SinkRoutes {
  /** The family's own topics → id and tag. */
  private readonly family: Map<string, ReplayTopic>;
  /** The replay topics followed; none without `replayTags`. */
  readonly replay: ReplayTopics | undefined;

  constructor(codecs: EventCodecs, ids: readonly TopicId[], replayTags: readonly string[] | 'all') {
    const prefix = codecs.naming.prefix ?? '';
    const familyTag = codecs.naming.tag ?? '';
    this.family = new Map(ids.map((id) => [codecs.topic(id), { id, tag: isDerived(id, prefix) ? familyTag : '' }] as const));
    this.replay = replayTags === 'all' || replayTags.length > 0 ? new ReplayTopics(prefix, ids, replayTags) : undefined;
  }

  /** The family's topics, read from the group's position. */
  get familyTopics(): string[] {
    return [...this.family.keys()];
  }

  /** The topic's id and tag, when the sink reads it. */
  of(topic: string): ReplayTopic | undefined {
    return this.family.get(topic) ?? this.replay?.match(topic);
  }

  /** The replay topics followed among `topics` (the cluster's), sorted. */
  replayTopicsAmong(topics: readonly string[]): string[] {
    const replay = this.replay;
    return replay ? topics.filter((t) => !this.family.has(t) && replay.match(t)).sort() : [];
  }
}
