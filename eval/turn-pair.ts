/**
 * A turn of an in-process eval run as the pipeline would carry it: the TurnPair the session
 * assembler would emit for (reply, reaction), and values as a consumer of a topic reads them.
 */
import { avroTypeOf, type ChatMessage as EventMessage, type TopicId, type TurnPair } from '../schemas/index.ts';
import { renderPrompt, type ChatMessage, type TransformerModel, ByteTokenizer } from '../policy/index.ts';
import type { Persona } from './persona.ts';

const tok = new ByteTokenizer();

function toEvent(m: ChatMessage): EventMessage {
  return { role: m.role, content: m.content, name: null, toolCallId: null, toolCalls: [] };
}

export function promptIds(model: TransformerModel, messages: ChatMessage[]): number[] {
  return renderPrompt(tok, messages, { maxPromptTokens: Math.floor((model.config.contextLength * 3) / 4) }).ids;
}

/** A TurnPair as the session assembler would emit it for (reply, reaction). */
export function makePair(
  run: string,
  i: number,
  persona: Persona,
  messages: ChatMessage[],
  prompt: number[],
  reply: { ids: number[]; logprobs: number[]; text: string; temperature?: number; topP?: number },
  reaction: { text: string; rating: number | null },
  version: number,
  served: { modelId?: string; exactLogprobs?: boolean } = {},
): TurnPair {
  const modelId = served.modelId ?? 'turnstream-tiny';
  const turnId = `${run}-t${i}`;
  const now = Date.now();
  return {
    pairId: turnId,
    sessionId: `${run}-s${i}`,
    userId: persona.name,
    turn: {
      turnId,
      mainTurnIndex: 0,
      policyModelId: modelId,
      policyVersion: version,
      model: modelId,
      requestMessages: messages.map(toEvent),
      response: { content: reply.text, toolCalls: [], finishReason: 'stop' },
      promptTokenIds: prompt,
      responseTokenIds: reply.ids,
      responseLogprobs: reply.logprobs,
      tokenized: true,
      exactLogprobs: served.exactLogprobs ?? true,
      samplingTemperature: reply.temperature ?? 1,
      samplingTopP: reply.topP ?? 1,
      toolsJson: null,
      requestedAt: now,
      completedAt: now,
    },
    nextState: [{ role: 'USER', content: reaction.text, toolCallId: null }],
    endMarker: null,
    feedback: reaction.rating === null ? [] : [{ feedbackId: `${turnId}-fb`, rating: reaction.rating, text: null, createdAt: now }],
    historyVerified: true,
    createdAt: now,
    tag: null,
  };
}

/**
 * `value` as a consumer of topic `id` reads it: the log-probs, rewards and weights that `eval
 * --pipeline` sends as Avro floats come back as float32, so both modes train on the same numbers.
 */
export function onTheWire<T>(id: TopicId, value: T): T {
  const type = avroTypeOf(id);
  return type.fromBuffer(type.toBuffer(value)) as T;
}

export const eventMessages = (messages: ChatMessage[]): EventMessage[] => messages.map(toEvent);
