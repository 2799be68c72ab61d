/**
 * `turnstream openclaw install-plugin [--state DIR] [--gateway URL]`: puts turnstream's
 * `rl-training-headers` plugin into an OpenClaw installation (integrations/openclaw/).
 */
import type { Command } from 'commander';
import { homedir } from 'node:os';
import { join } from 'node:path';
import { DEFAULT_TIMEOUT_SECONDS, installPlugin } from '../../integrations/index.ts';
import { ErrorCodes, invalidInput, TurnstreamError } from '../../core/index.ts';

const HELP = `
The plugin adds X-Session-Id (OpenClaw's session id) and X-Turn-Type (main for a run the user
started; side for heartbeat, memory and cron runs) to every LLM request OpenClaw sends through
the provider --provider names. It is copied to <state>/extensions/rl-training-headers/ and enabled
in <state>/openclaw.json (plugins.entries.rl-training-headers, with hooks.allowConversationAccess,
which its before_prompt_build hook needs). Restart OpenClaw's gateway afterwards.

With --gateway, a provider entry pointing at that turnstream gateway is added when the provider
is not configured yet; the model is --model, else the first one the gateway's /v1/models lists.
Then choose it as OpenClaw's model: agents.defaults.model.primary = "<provider>/<model>".

The provider's timeoutSeconds (--timeout, default ${DEFAULT_TIMEOUT_SECONDS}) bounds each model request. An agent's
first turn evaluates OpenClaw's whole prompt (about 7,200 tokens) before the first token, which
takes minutes on a small CPU (docs/openclaw.md has the figures); later turns reuse it. OpenClaw's
own default (300 s for a local provider) is not enough on a busy machine. \`openclaw agent\` also
bounds the whole turn (600 s, --timeout or agents.defaults.timeoutSeconds), and the gateway each
generation (GATEWAY_GENERATION_TIMEOUT_MS, 300 s): raise them together.
`;

/** OpenClaw's own default: $OPENCLAW_STATE_DIR, else ~/.openclaw. */
const defaultStateDir = (): string => process.env.OPENCLAW_STATE_DIR || join(homedir(), '.openclaw');

async function firstModel(gateway: string, apiKey: string | undefined): Promise<string> {
  const url = `${gateway.replace(/\/+$/, '')}/v1/models`;
  let res: Response;
  try {
    res = await fetch(url, { headers: apiKey ? { authorization: `Bearer ${apiKey}` } : {}, signal: AbortSignal.timeout(10_000) });
  } catch (err) {
    throw new TurnstreamError(
      ErrorCodes.UNAVAILABLE,
      `cannot reach the gateway at ${url} (${(err as Error).message}); start it, or name the model with --model`,
      { cause: err },
    );
  }
  const body = (await res.json().catch(() => null)) as { data?: Array<{ id?: unknown }> } | null;
  const id = body?.data?.[0]?.id;
  if (!res.ok || typeof id !== 'string')
    throw new TurnstreamError(ErrorCodes.UPSTREAM, `${url} answered ${res.status} without a model; name the model with --model`);
  return id;
}

export function register(program: Command): void {
  const openclaw = program.command('openclaw').description('OpenClaw integration: the rl-training-headers plugin');
  openclaw
    .command('install-plugin')
    .description('install the rl-training-headers plugin into an OpenClaw state directory')
    .option('--state <dir>', 'OpenClaw state directory (default: $OPENCLAW_STATE_DIR or ~/.openclaw)')
    .option('--config <file>', "OpenClaw's config file (default: <state>/openclaw.json)")
    .option('--provider <id>', 'provider (under models.providers) whose requests get the headers', 'turnstream')
    .option('--session-id-header <name>', 'header carrying the session id', 'X-Session-Id')
    .option('--turn-type-header <name>', 'header carrying the turn type', 'X-Turn-Type')
    .option('--gateway <url>', 'add the provider pointing at this turnstream gateway when it is not configured yet')
    .option('--model <id>', "the provider's model (with --gateway; default: the gateway's first model)")
    .option('--api-key <key>', 'API key for the gateway (with --gateway)')
    .option(
      '--timeout <seconds>',
      "the provider's timeoutSeconds: OpenClaw's bound on one model request (with --gateway)",
      String(DEFAULT_TIMEOUT_SECONDS),
    )
    .option('--json', 'print the result as one JSON object')
    .addHelpText('after', HELP)
    .action(
      async (flags: {
        state?: string;
        config?: string;
        provider: string;
        sessionIdHeader: string;
        turnTypeHeader: string;
        gateway?: string;
        model?: string;
        apiKey?: string;
        timeout: string;
        json?: boolean;
      }) => {
        for (const [name, v] of [
          ['--provider', flags.provider],
          ['--session-id-header', flags.sessionIdHeader],
          ['--turn-type-header', flags.turnTypeHeader],
        ]) {
          if (!/^[A-Za-z0-9!#$%&'*+.^_`|~-]+$/.test(v))
            throw invalidInput(`${name} must be a non-empty token of letters, digits and -_., got ${JSON.stringify(v)}`, name);
        }
        if (flags.gateway && !/^https?:\/\/[^/]/.test(flags.gateway))
          throw invalidInput(`--gateway must be an http(s) URL, got ${JSON.stringify(flags.gateway)}`, '--gateway');
        if (!/^[1-9]\d*$/.test(flags.timeout))
          throw invalidInput(`--timeout must be a whole number of seconds ≥ 1, got ${JSON.stringify(flags.timeout)}`, '--timeout');
        const gateway = flags.gateway
          ? {
              url: flags.gateway,
              apiKey: flags.apiKey,
              model: flags.model ?? (await firstModel(flags.gateway, flags.apiKey)),
              timeoutSeconds: Number(flags.timeout),
            }
          : undefined;
        const result = await installPlugin({
          stateDir: flags.state ?? defaultStateDir(),
          configPath: flags.config,
          provider: flags.provider,
          sessionIdHeader: flags.sessionIdHeader,
          turnTypeHeader: flags.turnTypeHeader,
          gateway,
        });
        if (flags.json) {
          process.stdout.write(`${JSON.stringify({ ...result, model: gateway?.model ?? null })}\n`);
          return;
        }
        process.stdout.write(
          `installed rl-training-headers in ${result.pluginDir}\nenabled it in ${result.configPath} for provider "${result.provider}"\n`,
        );
        if (result.providerAdded)
          process.stdout.write(
            `added provider "${result.provider}" → ${gateway!.url}/v1 (model ${gateway!.model}, timeoutSeconds ${gateway!.timeoutSeconds}); choose it with agents.defaults.model.primary = "${result.provider}/${gateway!.model}"\n`,
          );
        process.stdout.write("restart OpenClaw's gateway to load it\n");
      },
    );
}
