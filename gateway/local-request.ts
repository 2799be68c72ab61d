/**
 * What the engines that run a model here (the built-in tfjs model, llama.cpp) refuse alike: body
 * fields that are in no OpenAI reference (an upstream may know them; these engines do not),
 * reasoning and verbosity controls (these models do not reason), service tiers other than the
 * default, a completion `suffix` (insertion), and a `tool_choice` that forces a call (the model
 * decides whether to call). Each is a 400 naming the field.
 */
import { invalidInput } from '../core/index.ts';
import type { ChatRequest } from './chat-request.ts';

export function refuseForLocalEngine(req: ChatRequest, engine: string): void {
  const unknown = req.unknownFields?.[0];
  if (unknown !== undefined) throw invalidInput(`Unrecognized request argument supplied: ${unknown}`, unknown);
  if (req.reasoningEffort && req.reasoningEffort !== 'none') {
    throw invalidInput(`'reasoning_effort' is not supported by the ${engine} engine: its model does not reason.`, 'reasoning_effort');
  }
  if (req.verbosity) throw invalidInput(`'verbosity' is not supported by the ${engine} engine.`, 'verbosity');
  if (req.serviceTier && req.serviceTier !== 'auto' && req.serviceTier !== 'default') {
    throw invalidInput(
      `'service_tier' ${JSON.stringify(req.serviceTier)} is not supported: this gateway has one tier ('default').`,
      'service_tier',
    );
  }
  if (req.suffix) throw invalidInput(`'suffix' (text insertion) is not supported by the ${engine} engine.`, 'suffix');
  const choice = req.toolChoice;
  if (choice === 'required' || (choice !== null && typeof choice === 'object')) {
    throw invalidInput(
      `'tool_choice' ${choice === 'required' ? "'required'" : 'naming a function'} is not supported by the ${engine} engine: the model decides whether to call a tool ('auto' or 'none').`,
      'tool_choice',
    );
  }
}
