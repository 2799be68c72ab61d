/**
 * One rollout: a fresh sandbox with the task's files, the agent's episode in it through the
 * gateway, the verifier on what the episode left, and the sandbox disposed whatever happened
 * (an abort included: its commands are killed and its workspace removed).
 */
import { createSandbox } from '../sandbox/create-sandbox.ts';
import type { Sandbox } from '../sandbox/sandbox.ts';
import type { Task } from '../tasks/task.ts';
import { verifyRollout } from '../verify/verify-rollout.ts';
import { runBuiltinAgent } from './builtin-agent.ts';
import { aborted } from './episode-clock.ts';
import { rolloutClient } from './gateway-client.ts';
import type { OpenClawInstall } from '../../integrations/index.ts';
import { openClawSandboxOptions, resolveOpenClaw, runOpenClawAgent } from './openclaw-agent.ts';
import type { Episode, RolloutOptions, RolloutResult } from './rollout-types.ts';

/** The episode by the agent the options name. */
function play(task: Task, sandbox: Sandbox, opts: RolloutOptions, install: OpenClawInstall | null): Promise<Episode> {
  if (install) return runOpenClawAgent({ task, sandbox, install, rollout: opts });
  return runBuiltinAgent({
    task,
    sandbox,
    client: rolloutClient(opts),
    model: opts.model,
    metadata: opts.metadata,
    sampling: opts.sampling,
    systemPrompt: opts.systemPrompt,
    toolLimits: opts.toolLimits,
    toolOutputChars: opts.toolOutputChars,
    signal: opts.signal,
  });
}

/**
 * Runs one rollout of a task and verifies it.
 * @throws TurnstreamError TS_ERR_ABORTED when `opts.signal` aborts; TS_ERR_PREREQUISITE where no
 * sandbox can be made (nothing runs on the host instead)
 */
export async function runRollout(task: Task, opts: RolloutOptions): Promise<RolloutResult> {
  const started = performance.now();
  if (opts.signal?.aborted) throw aborted();
  const install = opts.agent === 'openclaw' ? await resolveOpenClaw(opts.openclaw) : null;
  const sandboxOptions = install ? openClawSandboxOptions(opts.sandbox ?? {}, install) : opts.sandbox;
  const sandbox = await createSandbox({ ...sandboxOptions, files: task.files });
  try {
    if (opts.signal?.aborted) throw aborted();
    const ep = await play(task, sandbox, opts, install);
    const v0 = performance.now();
    const verdict = await verifyRollout(task, { sandbox, finalAnswer: ep.finalAnswer, limits: opts.verifyLimits, signal: opts.signal });
    const verifyMs = Math.round(performance.now() - v0);
    return {
      sessionId: opts.sessionId,
      taskId: task.id,
      turnIds: ep.turnIds,
      policyVersions: ep.policyVersions,
      messages: ep.messages,
      finalAnswer: ep.finalAnswer,
      verdict,
      steps: ep.steps,
      stoppedBy: ep.stoppedBy,
      ...(ep.error !== undefined ? { error: ep.error } : {}),
      timings: { generationMs: ep.generationMs, toolMs: ep.toolMs, verifyMs, totalMs: Math.round(performance.now() - started) },
    };
  } finally {
    await sandbox.dispose();
  }
}
