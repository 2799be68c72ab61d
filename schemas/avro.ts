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

/** A model call's tokens as the engine saw them: the prompt's and the response's ids, each response token's log-prob. */
const rolloutTokens = () => [
  field('promptTokenIds', arr('int')),
  field('responseTokenIds', arr('int')),
  field('responseLogprobs', arr('float')),
];

/**
 * What the trainer needs to score a response as it was drawn: the sampling temperature and top-p,
 * and the prompt's head it keeps when it cuts a long prompt (fields added later, so with defaults).
 */
const samplingFields = () => [
  field('samplingTemperature', 'double', { default: 1 }),
  field('samplingTopP', 'double', { default: 1 }),
  field('promptHeadTokens', 'int', { default: 0 }),
];

function once(ctx: Ctx, name: string, def: () => Record<string, unknown>): Schema {
  if (ctx.has(name)) return `${NAMESPACE}.${name}`;
  ctx.add(name);
  return { name, namespace: NAMESPACE, ...def() };
}

/** A record type (its fields listed lazily, so that the types they define are defined inside it). */
const record = (ctx: Ctx, name: string, doc: string | null, fields: () => unknown[]): Schema =>
  once(ctx, name, () => ({ type: 'record', ...(doc === null ? {} : { doc }), fields: fields() }));

const enumOf = (ctx: Ctx, name: string, symbols: string[]) => once(ctx, name, () => ({ type: 'enum', symbols }));

const toolCall = (ctx: Ctx) =>
  record(ctx, 'ToolCall', null, () => [
    field('id', 'string'),
    field('type', 'string'),
    field('name', 'string'),
    field('arguments', 'string'),
  ]);

const chatMessage = (ctx: Ctx) =>
  record(ctx, 'ChatMessage', null, () => [
    field('role', 'string'),
    optField('content', 'string'),
    optField('name', 'string'),
    optField('toolCallId', 'string'),
    field('toolCalls', arr(toolCall(ctx)), { default: [] }),
  ]);

const assistantResponse = (ctx: Ctx) =>
  record(ctx, 'AssistantResponse', null, () => [
    optField('content', 'string'),
    field('toolCalls', arr(toolCall(ctx)), { default: [] }),
    field('finishReason', 'string'),
  ]);

const feedbackEvidence = (ctx: Ctx) =>
  record(ctx, 'FeedbackEvidence', null, () => [
    field('feedbackId', 'string'),
    optField('rating', 'int'),
    optField('text', 'string'),
    field('createdAt', millis),
  ]);

const pairTurn = (ctx: Ctx) =>
  record(ctx, 'PairTurn', null, () => [
    field('turnId', 'string'),
    field('mainTurnIndex', 'int'),
    field('policyModelId', 'string'),
    field('policyVersion', 'long'),
    field('model', 'string'),
    field('requestMessages', arr(chatMessage(ctx))),
    field('response', assistantResponse(ctx)),
    ...rolloutTokens(),
    field('tokenized', 'boolean'),
    field('exactLogprobs', 'boolean', { default: true }),
    ...samplingFields(),
    optField('toolsJson', 'string'),
    field('requestedAt', millis),
    field('completedAt', millis),
    field('nextMessages', arr(chatMessage(ctx)), { default: [] }),
    field('metadata', { type: 'map', values: 'string' }, { default: {} }),
  ]);

const endMarker = (ctx: Ctx) => enumOf(ctx, 'EndMarker', ['SESSION_DONE', 'IDLE_TIMEOUT']);

const turnPair = (ctx: Ctx) =>
  record(ctx, 'TurnPair', null, () => [
    field('pairId', 'string'),
    field('sessionId', 'string'),
    optField('userId', 'string'),
    field('turn', pairTurn(ctx)),
    field(
      'nextState',
      arr(
        record(ctx, 'NextStateItem', null, () => [
          field('role', enumOf(ctx, 'NextStateRole', ['USER', 'TOOL', 'ENVIRONMENT', 'FEEDBACK'])),
          field('content', 'string'),
          optField('toolCallId', 'string'),
        ]),
      ),
    ),
    optField('endMarker', endMarker(ctx)),
    field('feedback', arr(feedbackEvidence(ctx)), { default: [] }),
    field('historyVerified', 'boolean'),
    field('createdAt', millis),
    optField('tag', 'string'),
  ]);

export function turnSchema(ctx: Ctx = new Set()): Schema {
  return record(ctx, 'Turn', 'One API call to the gateway. Key: sessionId.', () => [
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
    ...rolloutTokens(),
    field('tokenized', 'boolean'),
    field('exactLogprobs', 'boolean', { default: true }),
    field('promptTruncatedTokens', 'int', { default: 0 }),
    field('promptHeadTokens', 'int', { default: 0 }),
    field(
      'sampling',
      record(ctx, 'SamplingParams', null, () => [
        optField('temperature', 'double'),
        optField('topP', 'double'),
        optField('maxTokens', 'int'),
        optField('seed', 'long'),
        field('stop', arr('string'), { default: [] }),
        optField('presencePenalty', 'double'),
        optField('frequencyPenalty', 'double'),
        // The request's response_format as JSON when it constrained the answer (json_object, json_schema).
        optField('responseFormat', 'string'),
      ]),
    ),
    field(
      'usage',
      record(ctx, 'Usage', null, () => [field('promptTokens', 'int'), field('completionTokens', 'int'), field('totalTokens', 'int')]),
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
      record(ctx, 'TurnTruncation', 'How the gateway shrank a Turn larger than its topic allows (gateway/turn-fit.ts).', () => [
        field('originalBytes', 'long'),
        field('truncatedFields', 'int'),
        field('maxFieldBytes', 'int'),
        field('tokenIdsDropped', 'boolean'),
        optField('keptIn', 'string'),
      ]),
    ),
    // Which of the call's choices this turn is (`n` > 1, or several prompts to /v1/completions): 0 for the first.
    field('choiceIndex', 'int', { default: 0 }),
    // The prompt was the client's own text or token ids (/v1/completions), not messages rendered by the chat template.
    field('rawPrompt', 'boolean', { default: false }),
  ]);
}

export function feedbackSchema(ctx: Ctx = new Set()): Schema {
  return record(ctx, 'Feedback', 'Explicit feedback on a turn. Key: sessionId.', () => [
    field('feedbackId', 'string'),
    field('sessionId', 'string'),
    optField('turnId', 'string'),
    optField('userId', 'string'),
    optField('rating', 'int'),
    optField('text', 'string'),
    field('createdAt', millis),
    optField('actedBy', 'string'),
  ]);
}

export function sessionStateSchema(ctx: Ctx = new Set()): Schema {
  return record(ctx, 'SessionState', 'Changelog of the session assembler. Key: sessionId.', () => [
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
  ]);
}

export function turnPairSchema(ctx: Ctx = new Set()): Schema {
  return turnPair(ctx);
}

export function judgementSchema(ctx: Ctx = new Set()): Schema {
  return record(ctx, 'Judgement', "The judge's verdict on a pair, with every vote. Key: turnId.", () => [
    field('judgementId', 'string'),
    field('turnId', 'string'),
    field('sessionId', 'string'),
    optField('userId', 'string'),
    field('policyVersion', 'long'),
    field('judgeId', 'string'),
    field(
      'votes',
      arr(
        record(ctx, 'Vote', null, () => [
          field('index', 'int'),
          optField('score', 'int'),
          optField('hint', 'string'),
          field('latencyMs', 'int'),
          optField('error', 'string'),
          field('attempts', 'int'),
        ]),
      ),
    ),
    field('score', 'int'),
    optField('hint', 'string'),
    field('pair', turnPair(ctx)),
    field('createdAt', millis),
    optField('tag', 'string'),
  ]);
}

export function sampleSchema(ctx: Ctx = new Set()): Schema {
  return record(ctx, 'Sample', 'One training sample. Key: sessionId.', () => [
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
    ...samplingFields(),
    field('reward', 'float'),
    optField('teacherLogprobs', arr('float')),
    optField('teacherTopK', arr(record(ctx, 'TopKEntry', null, () => [field('ids', arr('int')), field('logprobs', arr('float'))]))),
    optField('teacherPromptTokens', arr('int')),
    field('weight', 'float', { default: 1 }),
    field('judgeId', 'string'),
    field('createdAt', millis),
    optField('tag', 'string'),
    optField(
      'group',
      record(ctx, 'SampleGroup', 'A step of a gym rollout trained by its group (GRPO): reward is the advantage.', () => [
        field('batchId', 'string'),
        field('batchSamples', 'int'),
        field('groupId', 'string'),
        field('taskId', 'string'),
        field('rolloutIndex', 'int'),
        field('outcome', 'double'),
        field('advantage', 'double'),
      ]),
    ),
  ]);
}

const rolloutInfo = (ctx: Ctx) =>
  record(
    ctx,
    'RolloutInfo',
    'Where a gym rollout belongs: its task, its group (n rollouts of one task) and its batch (the groups of one step).',
    () => [
      field('suite', 'string'),
      field('taskId', 'string'),
      field('groupId', 'string'),
      field('batchId', 'string'),
      field('index', 'int'),
      field('groupSize', 'int'),
      field('batchGroups', 'int'),
      field('split', enumOf(ctx, 'RolloutSplit', ['TRAIN', 'EVAL', 'DEV', 'TEST'])),
    ],
  );

export function rewardSchema(ctx: Ctx = new Set()): Schema {
  return record(ctx, 'Reward', "A verifier's outcome for a session (a gym rollout). Key: sessionId.", () => [
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
  ]);
}

const trajectoryStep = (ctx: Ctx) =>
  record(ctx, 'TrajectoryStep', null, () => [
    field('turnId', 'string'),
    field('policyModelId', 'string'),
    field('policyVersion', 'long'),
    ...rolloutTokens(),
    field('exactLogprobs', 'boolean'),
    ...samplingFields(),
    field('tokenized', 'boolean'),
    field('completedAt', millis),
  ]);

export function trajectorySchema(ctx: Ctx = new Set()): Schema {
  return record(ctx, 'Trajectory', "A rollout's model calls with its outcome. Key: the rollout's batchId.", () => [
    field('sessionId', 'string'),
    optField('userId', 'string'),
    field('reward', rewardSchema(ctx)),
    field('steps', arr(trajectoryStep(ctx))),
    field('missingTurns', 'int'),
    field('createdAt', millis),
    optField('tag', 'string'),
  ]);
}

export function trajectoryStateSchema(ctx: Ctx = new Set()): Schema {
  return record(
    ctx,
    'TrajectoryState',
    "A session's rollout steps and outcome until its trajectory is complete (changelog of the trajectory assembler). Key: sessionId.",
    () => [
      field('sessionId', 'string'),
      optField('userId', 'string'),
      field('steps', arr(trajectoryStep(ctx)), { default: [] }),
      optField('reward', rewardSchema(ctx)),
      // Stream time the outcome was read at: a trajectory missing listed turns is let go after a while.
      optField('rewardSeenAt', 'long'),
      field('done', 'boolean', { default: false }),
      field('updatedAt', 'long'),
    ],
  );
}

export function batchStateSchema(ctx: Ctx = new Set()): Schema {
  return record(
    ctx,
    'BatchState',
    "A rollout batch's trajectories until all are in (changelog of the group builder). Key: batchId.",
    () => [
      field('batchId', 'string'),
      field('trajectories', arr(trajectorySchema(ctx)), { default: [] }),
      field('firstSeenAt', 'long'),
      field('done', 'boolean', { default: false }),
      field('updatedAt', 'long'),
    ],
  );
}

export function weightVersionSchema(ctx: Ctx = new Set()): Schema {
  const d = (name: string) => field(name, 'double');
  const i = (name: string) => field(name, 'long');
  return record(ctx, 'WeightVersion', 'A published checkpoint. Key: modelId.', () => [
    field('modelId', 'string'),
    field('version', 'long'),
    optField('parentVersion', 'long'),
    field('uri', 'string'),
    field('sha256', 'string'),
    field('format', 'string'),
    field('baseModel', 'string'),
    field(
      'metrics',
      record(ctx, 'TrainMetrics', null, () => [
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
      ]),
    ),
    field('createdAt', millis),
  ]);
}

export function weightChunkSchema(ctx: Ctx = new Set()): Schema {
  return record(
    ctx,
    'WeightChunk',
    "One piece of a weight version's files, for gateways with no shared disk. Key: <modelId>/<version>/<index>.",
    () => [
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
  );
}

export function deadLetterSchema(ctx: Ctx = new Set()): Schema {
  return record(ctx, 'DeadLetter', 'A record a stage could not decode or process, with the reason. Key: the original key.', () => [
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
  ]);
}

export function deadLetterReplaySchema(ctx: Ctx = new Set()): Schema {
  return record(
    ctx,
    'DeadLetterReplay',
    'A dead letter re-sent to its original topic (turnstream dlq replay), so it is never re-sent twice. Key: deadLetterId.',
    () => [
      field('deadLetterId', 'string'),
      field('topic', 'string'),
      field('partition', 'int'),
      field('offset', 'string'),
      field('stage', 'string'),
      field('code', 'string'),
      field('replayedAt', millis),
    ],
  );
}
