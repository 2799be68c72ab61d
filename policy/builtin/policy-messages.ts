import type { ChatMessage as EventMessage } from '../../schemas/index.ts';
import type { ChatMessage } from './chat-template.ts';

/**
 * Event messages → the built-in chat template's roles and plain text: `developer` counts as
 * `system`, an assistant's tool calls are appended to its text as `name(arguments)` lines. The
 * gateway renders a request and the OPD teacher renders a hinted prompt with this one function,
 * so a teacher prompt differs from the rollout prompt only by the hint.
 */
export function toPolicyMessages(messages: readonly EventMessage[]): ChatMessage[] {
  return messages.map((m) => {
    const role = m.role === 'developer' ? 'system' : (m.role as ChatMessage['role']);
    let content = m.content ?? '';
    if (m.toolCalls.length > 0) {
      const calls = m.toolCalls.map((t) => `${t.name}(${t.arguments})`).join('\n');
      content = content ? `${content}\n${calls}` : calls;
    }
    return { role, content };
  });
}
