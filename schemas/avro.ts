/**
 * turnstream's Avro schemas, composed from shared fragments so that a type used by several
 * events (ChatMessage, PairTurn, …) is written once. `npm run schemas:write` writes them as
 * schemas/avsc/*.avsc for tools outside TypeScript; a test keeps those files current.
 */
export const NAMESPACE = 'dev.turnstream.v1';

type Schema = string | Record<string, unknown> | unknown[];
/** Named types already defined in the schema being built: Avro allows one definition each. */
type Ctx = Set<string>;

const opt = (t: Schema) => ['null', t];
const field = (name: string, type: Schema, extra: Record<string, unknown> = {}) => ({ name, type, ...extra });
const optField = (name: string, type: Schema) => ({ name, type: opt(type), default: null });
const arr = (items: Schema) => ({ type: 'array', items });
const millis = { type: 'long', logicalType: 'timestamp-millis' };

function once(ctx: Ctx, name: string, def: () => Record<string, unknown>): Schema {
  if (ctx.has(name)) return `${NAMESPACE}.${name}`;
  ctx.add(name);
  return { name, namespace: NAMESPACE, ...def() };
}

const enumOf = (ctx: Ctx, name: string, symbols: string[]) => once(ctx, name, () => ({ type: 'enum', symbols }));

const toolCall = (ctx: Ctx) =>
  once(ctx, 'ToolCall', () => ({
    type: 'record',
    fields: [field('id', 'string'), field('type', 'string'), field('name', 'string'), field('arguments', 'string')],
  }));

const chatMessage = (ctx: Ctx) =>
  once(ctx, 'ChatMessage', () => ({
    type: 'record',
    fields: [
      field('role', 'string'),
      optField('content', 'string'),
      optField('name', 'string'),
      optField('toolCallId', 'string'),
      field('toolCalls', arr(toolCall(ctx)), { default: [] }),
    ],
  }));

const assistantResponse = (ctx: Ctx) =>
  once(ctx, 'AssistantResponse', () => ({
    type: 'record',
    fields: [optField('content', 'string'), field('toolCalls', arr(toolCall(ctx)), { default: [] }), field('finishReason', 'string')],
  }));

const feedbackEvidence = (ctx: Ctx) =>
  once(ctx, 'FeedbackEvidence', () => ({
    type: 'record',
    fields: [field('feedbackId', 'string'), optField('rating', 'int'), optField('text', 'string'), field('createdAt', millis)],
  }));

const pairTurn = (ctx: Ctx) =>
  once(ctx, 'PairTurn', () => ({
    type: 'record',
    fields: [
      field('turnId', 'string'),
      field('mainTurnIndex', 'int'),
      field('policyModelId', 'string'),
      field('policyVersion', 'long'),
      field('model', 'string'),
      field('requestMessages', arr(chatMessage(ctx))),
      field('response', assistantResponse(ctx)),
      field('promptTokenIds', arr('int')),
      field('responseTokenIds', arr('int')),
      field('responseLogprobs', arr('float')),
      field('tokenized', 'boolean'),
      field('exactLogprobs', 'boolean', { default: true }),
      field('samplingTemperature', 'double', { default: 1 }),
      field('samplingTopP', 'double', { default: 1 }),
      field('promptHeadTokens', 'int', { default: 0 }),
      optField('toolsJson', 'string'),
      field('requestedAt', millis),
      field('completedAt', millis),
      field('nextMessages', arr(chatMessage(ctx)), { default: [] }),
      field('metadata', { type: 'map', values: 'string' }, { default: {} }),
    ],
  }));

const endMarker = (ctx: Ctx) => enumOf(ctx, 'EndMarker', ['SESSION_DONE', 'IDLE_TIMEOUT']);

const turnPair = (ctx: Ctx) =>
  once(ctx, 'TurnPair', () => ({
    type: 'record',
    fields: [
      field('pairId', 'string'),
      field('sessionId', 'string'),
      optField('userId', 'string'),
      field('turn', pairTurn(ctx)),
      field(
        'nextState',
        arr(
          once(ctx, 'NextStateItem', () => ({
            type: 'record',
            fields: [
              field('role', enumOf(ctx, 'NextStateRole', ['USER', 'TOOL', 'ENVIRONMENT', 'FEEDBACK'])),
              field('content', 'string'),
              optField('toolCallId', 'string'),
            ],
          })),
        ),
      ),
      optField('endMarker', endMarker(ctx)),
      field('feedback', arr(feedbackEvidence(ctx)), { default: [] }),
      field('historyVerified', 'boolean'),
      field('createdAt', millis),
      optField('tag', 'string'),
    ],
  }));

export function turnSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'Turn', () => ({
    type: 'record',
    doc: 'One API call to the gateway. Key: sessionId.',
    fields: [
      field('turnId', 'string'),
      field('sessionId', 'string'),
      field('sessionSource', enumOf(ctx, 'SessionSource', ['HEADER', 'BODY', 'INFERRED', 'GENERATED', 'IMPORTED'])),
      optField('userId', 'string'),
      field('turnType', enumOf(ctx, 'TurnType', ['MAIN', 'SIDE'])),
      field('sessionDone', 'boolean', { default: false }),
      field('requestedAt', millis),
      field('completedAt', millis),
      field('model', 'string'),
      field('policyModelId', 'string'),
      field('policyVersion', 'long'),
      field('requestMessages', arr(chatMessage(ctx))),
      optField('toolsJson', 'string'),
      field('response', assistantResponse(ctx)),
      field('promptTokenIds', arr('int')),
      field('responseTokenIds', arr('int')),
      field('responseLogprobs', arr('float')),
      field('tokenized', 'boolean'),
      field('exactLogprobs', 'boolean', { default: true }),
      field('promptTruncatedTokens', 'int', { default: 0 }),
      field('promptHeadTokens', 'int', { default: 0 }),
      field(
        'sampling',
        once(ctx, 'SamplingParams', () => ({
          type: 'record',
          fields: [
            optField('temperature', 'double'),
            optField('topP', 'double'),
            optField('maxTokens', 'int'),
            optField('seed', 'long'),
            field('stop', arr('string'), { default: [] }),
            optField('presencePenalty', 'double'),
            optField('frequencyPenalty', 'double'),
            // The request's response_format as JSON when it constrained the answer (json_object, json_schema).
            optField('responseFormat', 'string'),
          ],
        })),
      ),
      field(
        'usage',
        once(ctx, 'Usage', () => ({
          type: 'record',
          fields: [field('promptTokens', 'int'), field('completionTokens', 'int'), field('totalTokens', 'int')],
        })),
      ),
      field('latencyMs', 'int'),
      field('gatewayId', 'string'),
      field('nextMessages', arr(chatMessage(ctx)), { default: [] }),
      // Who made the call when a service key acted for `userId` (X-User-Id / user); null otherwise.
      optField('actedBy', 'string'),
      // The request's OpenAI `metadata` (at most 16 string pairs): a gym rollout's task, group and index.
      field('metadata', { type: 'map', values: 'string' }, { default: {} }),
      optField(
        'truncation',
        once(ctx, 'TurnTruncation', () => ({
          type: 'record',
          doc: 'How the gateway shrank a Turn larger than its topic allows (gateway/turn-fit.ts).',
          fields: [
            field('originalBytes', 'long'),
            field('truncatedFields', 'int'),
            field('maxFieldBytes', 'int'),
            field('tokenIdsDropped', 'boolean'),
            optField('keptIn', 'string'),
          ],
        })),
      ),
      // Which of the call's choices this turn is (`n` > 1, or several prompts to /v1/completions): 0 for the first.
      field('choiceIndex', 'int', { default: 0 }),
      // The prompt was the client's own text or token ids (/v1/completions), not messages rendered by the chat template.
      field('rawPrompt', 'boolean', { default: false }),
    ],
  }));
}

export function feedbackSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'Feedback', () => ({
    type: 'record',
    doc: 'Explicit feedback on a turn. Key: sessionId.',
    fields: [
      field('feedbackId', 'string'),
      field('sessionId', 'string'),
      optField('turnId', 'string'),
      optField('userId', 'string'),
      optField('rating', 'int'),
      optField('text', 'string'),
      field('createdAt', millis),
      optField('actedBy', 'string'),
    ],
  }));
}

export function sessionStateSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'SessionState', () => ({
    type: 'record',
    doc: 'Changelog of the session assembler. Key: sessionId.',
    fields: [
      field('sessionId', 'string'),
      optField('userId', 'string'),
      field('mainTurnCount', 'int'),
      optField('pending', pairTurn(ctx)),
      field('pendingFeedback', arr(feedbackEvidence(ctx)), { default: [] }),
      field('recentIds', arr('string'), { default: [] }),
      field('lastActivityAt', millis),
      field('closed', 'boolean'),
      optField('closedReason', endMarker(ctx)),
      // Pairs ready but held for the feedback grace period, and feedback read before its turn.
      field('held', arr(turnPair(ctx)), { default: [] }),
      field('earlyFeedback', arr(feedbackSchema(ctx)), { default: [] }),
    ],
  }));
}

export function turnPairSchema(ctx: Ctx = new Set()): Schema {
  return turnPair(ctx);
}

export function judgementSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'Judgement', () => ({
    type: 'record',
    doc: "The judge's verdict on a pair, with every vote. Key: turnId.",
    fields: [
      field('judgementId', 'string'),
      field('turnId', 'string'),
      field('sessionId', 'string'),
      optField('userId', 'string'),
      field('policyVersion', 'long'),
      field('judgeId', 'string'),
      field(
        'votes',
        arr(
          once(ctx, 'Vote', () => ({
            type: 'record',
            fields: [
              field('index', 'int'),
              optField('score', 'int'),
              optField('hint', 'string'),
              field('latencyMs', 'int'),
              optField('error', 'string'),
              field('attempts', 'int'),
            ],
          })),
        ),
      ),
      field('score', 'int'),
      optField('hint', 'string'),
      field('pair', turnPair(ctx)),
      field('createdAt', millis),
      optField('tag', 'string'),
    ],
  }));
}

export function sampleSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'Sample', () => ({
    type: 'record',
    doc: 'One training sample. Key: sessionId.',
    fields: [
      field('sampleId', 'string'),
      field('turnId', 'string'),
      field('sessionId', 'string'),
      optField('userId', 'string'),
      field('policyModelId', 'string'),
      field('policyVersion', 'long'),
      field('method', enumOf(ctx, 'SampleMethod', ['RL', 'OPD', 'COMBINED'])),
      field('tokens', arr('int')),
      field('promptLength', 'int'),
      field('responseLength', 'int'),
      field('lossMask', arr('int')),
      field('rolloutLogprobs', arr('float')),
      field('exactLogprobs', 'boolean', { default: true }),
      field('samplingTemperature', 'double', { default: 1 }),
      field('samplingTopP', 'double', { default: 1 }),
      field('promptHeadTokens', 'int', { default: 0 }),
      field('reward', 'float'),
      optField('teacherLogprobs', arr('float')),
      optField(
        'teacherTopK',
        arr(once(ctx, 'TopKEntry', () => ({ type: 'record', fields: [field('ids', arr('int')), field('logprobs', arr('float'))] }))),
      ),
      optField('teacherPromptTokens', arr('int')),
      field('weight', 'float', { default: 1 }),
      field('judgeId', 'string'),
      field('createdAt', millis),
      optField('tag', 'string'),
      optField(
        'group',
        once(ctx, 'SampleGroup', () => ({
          type: 'record',
          doc: 'A step of a gym rollout trained by its group (GRPO): reward is the advantage.',
          fields: [
            field('batchId', 'string'),
            field('batchSamples', 'int'),
            field('groupId', 'string'),
            field('taskId', 'string'),
            field('rolloutIndex', 'int'),
            field('outcome', 'double'),
            field('advantage', 'double'),
          ],
        })),
      ),
    ],
  }));
}

const rolloutInfo = (ctx: Ctx) =>
  once(ctx, 'RolloutInfo', () => ({
    type: 'record',
    doc: 'Where a gym rollout belongs: its task, its group (n rollouts of one task) and its batch (the groups of one step).',
    fields: [
      field('suite', 'string'),
      field('taskId', 'string'),
      field('groupId', 'string'),
      field('batchId', 'string'),
      field('index', 'int'),
      field('groupSize', 'int'),
      field('batchGroups', 'int'),
      field('split', enumOf(ctx, 'RolloutSplit', ['TRAIN', 'EVAL', 'DEV', 'TEST'])),
    ],
  }));

export function rewardSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'Reward', () => ({
    type: 'record',
    doc: "A verifier's outcome for a session (a gym rollout). Key: sessionId.",
    fields: [
      field('rewardId', 'string'),
      field('sessionId', 'string'),
      optField('userId', 'string'),
      field('source', 'string'),
      field('reward', 'double'),
      optField('passed', 'boolean'),
      optField('detail', 'string'),
      field('turnIds', arr('string'), { default: [] }),
      // The model id and version that served the rollout's first call, when the sender knows them.
      optField('policyModelId', 'string'),
      optField('policyVersion', 'long'),
      optField('rollout', rolloutInfo(ctx)),
      field('createdAt', millis),
      field('parts', { type: 'map', values: 'boolean' }, { default: {} }),
    ],
  }));
}

const trajectoryStep = (ctx: Ctx) =>
  once(ctx, 'TrajectoryStep', () => ({
    type: 'record',
    fields: [
      field('turnId', 'string'),
      field('policyModelId', 'string'),
      field('policyVersion', 'long'),
      field('promptTokenIds', arr('int')),
      field('responseTokenIds', arr('int')),
      field('responseLogprobs', arr('float')),
      field('exactLogprobs', 'boolean'),
      field('samplingTemperature', 'double', { default: 1 }),
      field('samplingTopP', 'double', { default: 1 }),
      field('promptHeadTokens', 'int', { default: 0 }),
      field('tokenized', 'boolean'),
      field('completedAt', millis),
    ],
  }));

export function trajectorySchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'Trajectory', () => ({
    type: 'record',
    doc: "A rollout's model calls with its outcome. Key: the rollout's batchId.",
    fields: [
      field('sessionId', 'string'),
      optField('userId', 'string'),
      field('reward', rewardSchema(ctx)),
      field('steps', arr(trajectoryStep(ctx))),
      field('missingTurns', 'int'),
      field('createdAt', millis),
      optField('tag', 'string'),
    ],
  }));
}

export function trajectoryStateSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'TrajectoryState', () => ({
    type: 'record',
    doc: "A session's rollout steps and outcome until its trajectory is complete (changelog of the trajectory assembler). Key: sessionId.",
    fields: [
      field('sessionId', 'string'),
      optField('userId', 'string'),
      field('steps', arr(trajectoryStep(ctx)), { default: [] }),
      optField('reward', rewardSchema(ctx)),
      // Stream time the outcome was read at: a trajectory missing listed turns is let go after a while.
      optField('rewardSeenAt', 'long'),
      field('done', 'boolean', { default: false }),
      field('updatedAt', 'long'),
    ],
  }));
}

export function batchStateSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'BatchState', () => ({
    type: 'record',
    doc: "A rollout batch's trajectories until all are in (changelog of the group builder). Key: batchId.",
    fields: [
      field('batchId', 'string'),
      field('trajectories', arr(trajectorySchema(ctx)), { default: [] }),
      field('firstSeenAt', 'long'),
      field('done', 'boolean', { default: false }),
      field('updatedAt', 'long'),
    ],
  }));
}

export function weightVersionSchema(ctx: Ctx = new Set()): Schema {
  const d = (name: string) => field(name, 'double');
  const i = (name: string) => field(name, 'long');
  return once(ctx, 'WeightVersion', () => ({
    type: 'record',
    doc: 'A published checkpoint. Key: modelId.',
    fields: [
      field('modelId', 'string'),
      field('version', 'long'),
      optField('parentVersion', 'long'),
      field('uri', 'string'),
      field('sha256', 'string'),
      field('format', 'string'),
      field('baseModel', 'string'),
      field(
        'metrics',
        once(ctx, 'TrainMetrics', () => ({
          type: 'record',
          fields: [
            d('loss'),
            d('meanReward'),
            d('kl'),
            d('clipFraction'),
            i('samples'),
            i('tokens'),
            d('logprobDrift'),
            i('droppedStale'),
            i('steps'),
            field('mismatchKl', 'double', { default: 0 }),
            field('tisMean', 'double', { default: 1 }),
            field('tisTruncated', 'double', { default: 0 }),
            field('stepSeconds', 'double', { default: 0 }),
          ],
        })),
      ),
      field('createdAt', millis),
    ],
  }));
}

export function weightChunkSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'WeightChunk', () => ({
    type: 'record',
    doc: "One piece of a weight version's files, for gateways with no shared disk. Key: <modelId>/<version>/<index>.",
    fields: [
      field('modelId', 'string'),
      field('version', 'long'),
      field('index', 'int', { doc: "position among the version's chunks" }),
      field('count', 'int', { doc: "the version's chunks" }),
      field('file', 'string', { doc: "file name in the version's folder" }),
      field('fileOffset', 'long'),
      field('fileBytes', 'long'),
      field('fileSha256', 'string'),
      field('sha256', 'string', { doc: 'of data' }),
      field('data', 'bytes'),
      field('createdAt', millis),
    ],
  }));
}

export function deadLetterSchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'DeadLetter', () => ({
    type: 'record',
    doc: 'A record a stage could not decode or process, with the reason. Key: the original key.',
    fields: [
      field('topic', 'string'),
      field('partition', 'int'),
      field('offset', 'string'),
      optField('key', 'bytes'),
      optField('value', 'bytes'),
      field('code', 'string'),
      field('message', 'string'),
      field('stage', 'string'),
      field('failedAt', millis),
      field('attempts', 'int'),
    ],
  }));
}

export function deadLetterReplaySchema(ctx: Ctx = new Set()): Schema {
  return once(ctx, 'DeadLetterReplay', () => ({
    type: 'record',
    doc: 'A dead letter re-sent to its original topic (turnstream dlq replay), so it is never re-sent twice. Key: deadLetterId.',
    fields: [
      field('deadLetterId', 'string'),
      field('topic', 'string'),
      field('partition', 'int'),
      field('offset', 'string'),
      field('stage', 'string'),
      field('code', 'string'),
      field('replayedAt', millis),
    ],
  }));
}
