/**
 * Which topics of a replay the sink follows: `<prefix>turnstream.replay.<tag>.<name>.v1` for
 * the derived topics it stores, for a list of tags or any tag. Names are built with
 * schemas/topics.ts's `topicName`, so they follow it should the layout change.
 */
import { topicName, type TopicId } from '../../schemas/index.ts';

/** Letters, digits, `-` and `_`: what `turnstream replay --tag` accepts. */
const TAG = /^[A-Za-z0-9_-]+$/;
/** Stands for the tag while a name is turned into a pattern; cannot occur in a topic name. */
const MARK = '\u0000';

const escapeRegExp = (s: string): string => s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');

/** True when a replay re-derives the topic (its name changes with the tag). */
export const isDerived = (id: TopicId, prefix: string): boolean => topicName(id, { prefix, tag: 'x' }) !== topicName(id, { prefix });

export interface ReplayTopic {
  id: TopicId;
  tag: string;
}

export class ReplayTopics {
  /** Every followed topic: one alternative per topic id, the tag captured. */
  readonly pattern: RegExp;
  private readonly byId: Array<[TopicId, RegExp]>;

  /**
   * @param prefix the family's topic prefix
   * @param ids the topics stored (those a replay does not re-derive are ignored)
   * @param tags the tags to follow, or 'all'
   */
  constructor(prefix: string, ids: readonly TopicId[], tags: readonly string[] | 'all') {
    if (tags !== 'all') {
      const bad = tags.filter((t) => !TAG.test(t));
      if (bad.length > 0) throw new Error(`replay tags must be letters, digits, - or _: ${bad.map((t) => JSON.stringify(t)).join(', ')}`);
    }
    // No tag: a pattern that matches nothing.
    const tag = tags === 'all' ? '[A-Za-z0-9_-]+' : tags.length > 0 ? tags.map(escapeRegExp).join('|') : '(?!)';
    this.byId = ids
      .filter((id) => isDerived(id, prefix))
      .map((id) => {
        const [before, after] = topicName(id, { prefix, tag: MARK }).split(MARK);
        return [id, new RegExp(`^${escapeRegExp(before)}(${tag})${escapeRegExp(after)}$`)];
      });
    this.pattern = new RegExp(this.byId.map(([, re]) => `(?:${re.source})`).join('|') || '(?!)');
  }

  /** The topic's id and tag when the sink follows it. */
  match(topic: string): ReplayTopic | undefined {
    for (const [id, re] of this.byId) {
      const m = re.exec(topic);
      if (m) return { id, tag: m[1] };
    }
    return undefined;
  }
}
