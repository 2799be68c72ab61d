/**
 * Assigns partition NUMBERS to members: a member that gets partition p gets it for every
 * subscribed topic. Co-keyed topics (turns, feedback, session state) then meet in one
 * instance, which the changelog-backed state needs. kafkajs's round-robin spreads each
 * topic independently and would split a session across instances.
 */
import type { PartitionAssigner } from 'kafkajs';
import { AssignerProtocol } from './kafkajs.ts';

export const CoPartitionedAssigner: PartitionAssigner = ({ cluster }) => ({
  name: 'TurnstreamCoPartitioned',
  version: 1,
  async assign({ members, topics }) {
    const sorted = members.map((m) => m.memberId).sort();
    const partitionsOf = new Map(topics.map((t) => [t, cluster.findTopicPartitionMetadata(t).map((m) => m.partitionId)]));
    const maxPartitions = Math.max(0, ...[...partitionsOf.values()].map((p) => p.length));
    const assignment = new Map<string, Record<string, number[]>>(sorted.map((m) => [m, {}]));
    for (let p = 0; p < maxPartitions; p++) {
      const member = sorted[p % sorted.length];
      const a = assignment.get(member)!;
      for (const [topic, parts] of partitionsOf) if (parts.includes(p)) (a[topic] ??= []).push(p);
    }
    return sorted.map((memberId) => ({
      memberId,
      memberAssignment: AssignerProtocol.MemberAssignment.encode({
        version: 1,
        assignment: assignment.get(memberId)!,
        userData: Buffer.alloc(0),
      }),
    }));
  },
  protocol({ topics }) {
    return {
      name: 'TurnstreamCoPartitioned',
      metadata: AssignerProtocol.MemberMetadata.encode({ version: 1, topics, userData: Buffer.alloc(0) }),
    };
  },
});
