/** A chat message as a Turn's request carries it, for tests: no name and no tool call unless `over` gives them. */
import type { ChatMessage } from '../../schemas/index.ts';

export const chatMessage = (role: string, content: string | null, over: Partial<ChatMessage> = {}): ChatMessage => ({
  role,
  content,
  name: null,
  toolCallId: null,
  toolCalls: [],
  ...over,
});
