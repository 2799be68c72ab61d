/**
 * `POST /v1/completions`, OpenAI's legacy text completions (what lm-eval-harness and older SDKs
 * speak), non-streaming and streaming, captured like chat: one Turn per choice (`rawPrompt`
 * set, the prompt as one user message, its token ids as the engine used them). Every response
 * id is `cmpl-<turnId>`, with `X-Turn-Id` (and `X-Turn-Ids` for several choices) and
 * `X-Session-Id`.
 *
 * A prompt is not a conversation: the session is the one named (X-Session-Id / `session_id`) or a
 * new one, never inferred, and its turns are `side` unless the call says `X-Turn-Type: main`
 * (benchmark prompts and scoring calls are recorded, not trained on). `echo` returns the prompt
 * before each choice's text; `logprobs` (0…5) gives each token's log-prob and that many
 * alternatives, in the legacy shape (completion-logprobs.ts).
 */
import { randomUUID } from 'node:crypto';
import type { FastifyPluginAsync, FastifyRequest } from 'fastify';
import type { SessionSource } from '../schemas/index.ts';
import { OPEN_CALLER } from './auth.ts';
import {
  callTurnId,
  choicesOf,
  startCall,
  type CallRun,
  completeCall,
  enterNamedSession,
  usageOf,
  type Choice,
  type GenerationDeps,
  type Resolved,
} from './call-runner.ts';
import { streamCall } from './chat-completions.ts';
import { CompletionLogprobsBuilder, type CompletionLogprobs } from './completion-logprobs.ts';
import { parseCompletionRequest, type CompletionRequest } from './completion-request.ts';
import type { Delta } from './engine.ts';
import { resolveTurnContext } from './turn-context.ts';

const ROUTE = '/v1/completions';

function resolve(request: FastifyRequest, deps: GenerationDeps): { r: Resolved; c: CompletionRequest } {
  const requestedAt = Date.now();
  const c = parseCompletionRequest(request.body, { maxTokensLimit: deps.maxTokensLimit });
  const req = c.base;
  deps.engine.checkModel(req.model);
  for (const prompt of c.prompts) deps.engine.checkRequest({ ...req, prompt });
  const caller = request.caller ?? OPEN_CALLER;
  const ctx = resolveTurnContext(request.headers, req, { defaultTurnType: 'side', caller });
  enterNamedSession(deps, caller, ctx);
  const sessionId = ctx.sessionId ?? randomUUID();
  const sessionSource: SessionSource = ctx.sessionSource ?? 'GENERATED';
  const turnId = callTurnId(request, sessionId);
  return { r: { req, ctx, sessionId, sessionSource, turnId, requestedAt, model: req.model || deps.defaultModel() }, c };
}

/** What a choice returns: its text (the prompt first with `echo`) and log-probs, built as it streams. */
class ChoiceText {
  text = '';
  readonly logprobs: CompletionLogprobsBuilder | null;
  private all: CompletionLogprobs | null;

  constructor(
    private readonly echo: boolean,
    wantLogprobs: boolean,
  ) {
    this.logprobs = wantLogprobs ? new CompletionLogprobsBuilder() : null;
    this.all = wantLogprobs ? { tokens: [], token_logprobs: [], top_logprobs: [], text_offset: [] } : null;
  }

  /** The echoed prompt's piece (null without `echo`). */
  prompt(c: Choice): { text: string; logprobs: CompletionLogprobs | null } | null {
    const p = c.prompt;
    if (!this.echo || !p) return null;
    this.text += p.text;
    if (!p.logprobs) this.logprobs?.skip(p.text);
    return { text: p.text, logprobs: p.logprobs ? this.collect(p.logprobs) : null };
  }

  delta(d: Delta): { text: string; logprobs: CompletionLogprobs | null } {
    const text = d.content ?? '';
    this.text += text;
    return { text, logprobs: this.collect(d.logprobs?.content ?? []) };
  }

  private collect(entries: Parameters<CompletionLogprobsBuilder['add']>[0]): CompletionLogprobs | null {
    if (!this.logprobs || !this.all) return null;
    const part = this.logprobs.add(entries);
    this.all.tokens.push(...part.tokens);
    this.all.token_logprobs.push(...part.token_logprobs);
    this.all.top_logprobs.push(...part.top_logprobs);
    this.all.text_offset.push(...part.text_offset);
    return part;
  }

  get allLogprobs(): CompletionLogprobs | null {
    return this.all;
  }
}

/** The completions route as a fastify plugin: `app.register(completions, deps)`. */
export const completions: FastifyPluginAsync<GenerationDeps> = async (app, deps) => {
  app.post(ROUTE, async (request, reply) => {
    const { r, c } = resolve(request, deps);
    const run = await startCall(request, reply, ROUTE, r, choicesOf(r, c.prompts), deps);
    const texts = new Map(run.choices.map((ch) => [ch.index, new ChoiceText(r.req.echo === true, c.logprobs !== null)]));
    if (r.req.stream) return streamCompletions(run, texts);

    return {
      id: `cmpl-${r.turnId}`,
      object: 'text_completion',
      ...(await completeCall(run, {
        prompt: (ch) => texts.get(ch.index)!.prompt(ch),
        delta: (ch, d) => texts.get(ch.index)!.delta(d),
      })),
      choices: run.choices.map((ch) => {
        const t = texts.get(ch.index)!;
        return { text: t.text, index: ch.index, logprobs: t.allLogprobs, finish_reason: ch.result!.finishReason };
      }),
      usage: usageOf(run.choices),
    };
  });
};

function streamCompletions(run: CallRun, texts: Map<number, ChoiceText>): Promise<void> {
  const { r } = run;
  const head = { id: `cmpl-${r.turnId}`, object: 'text_completion' };
  return streamCall(run, head, (write) => {
    const chunk = (index: number, text: string, logprobs: CompletionLogprobs | null, finish: string | null = null) =>
      write({ text, index, logprobs, finish_reason: finish });
    return {
      prompt: (ch) => {
        const p = texts.get(ch.index)!.prompt(ch);
        if (p) chunk(ch.index, p.text, p.logprobs);
      },
      delta: (ch, d) => {
        const piece = texts.get(ch.index)!.delta(d);
        if (piece.text || piece.logprobs) chunk(ch.index, piece.text, piece.logprobs);
      },
      done: (ch) => chunk(ch.index, '', null, ch.result!.finishReason),
    };
  });
}
