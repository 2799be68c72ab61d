/** A conversation as the gateway records it, for tests of what is built from turns. */
import type { ChatMessage, Turn } from '../../schemas/index.ts';
import { chatMessage } from './chat-message.ts';
import { exampleTurn } from './fixtures.ts';

/**
 * One main turn per user message: turn i's request is the whole history (a "Be brief." system
 * message, then every message so far) ending with `userMessages[i]`; its reply is `reply i`.
 * `each(i)` gives the rest of turn i (ids, times, anything overridden).
 */
export function conversationTurns(userMessages: readonly string[], each: (i: number) => Partial<Turn>): Turn[] {
  const history: ChatMessage[] = [chatMessage('system', 'Be brief.')];
  return userMessages.map((u, i) => {
    history.push(chatMessage('user', u));
    const turn = exampleTurn({
      requestMessages: [...history],
      response: { content: `reply ${i}`, toolCalls: [], finishReason: 'stop' },
      ...each(i),
    });
    history.push(chatMessage('assistant', `reply ${i}`));
    return turn;
  });
}
