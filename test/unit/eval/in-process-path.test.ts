/**
 * The in-process learning path on a GGUF model (a tiny one the test writes) served by llama.cpp:
 * after a learner step, an earlier version still answers when asked by number, as it did before
 * the step, which is what measuring a run's peak again at its end relies on.
 */
import assert from 'node:assert/strict';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import { inProcessPath } from '../../../eval/in-process-path.ts';
import { llamaEvalModels } from '../../../eval/eval-model.ts';
import { openingMessages } from '../../../eval/persona.ts';
import { terseTom } from '../../support/persona-spec.ts';
import { react } from '../../../eval/reaction.ts';
import { familyStepOptions, familyStepSettings } from '../../../trainer/step-defaults.ts';
import { selectBackend, writeTinyModel } from '../../../policy/index.ts';

test(
  'inProcessPath on a GGUF model: a past LoRA version answers by number, as it did when it was current',
  { timeout: 300_000 },
  async () => {
    const dir = await mkdtemp(join(tmpdir(), 'ts-eval-pin-'));
    try {
      await selectBackend('wasm');
      const tiny = await writeTinyModel(join(dir, 'tiny.gguf'), { architecture: 'llama', seed: 5 });
      const persona = terseTom();
      const models = await llamaEvalModels({
        model: { name: 'tiny', path: tiny.path, sha256: tiny.sha256 },
        dir: join(dir, 'runs'),
        sampling: { maxTokens: 6, temperature: 1 },
        lr: 1e-2,
        step: familyStepOptions(familyStepSettings(true, {})),
      });
      try {
        const run = await inProcessPath({ models, method: 'combined' }).open(persona, 1);
        try {
          assert.equal(run.pastVersions, true);
          const question = openingMessages(persona, 'what is gravity?');
          const before = await run.heldOut(question, 77, 3, 'before');
          assert.equal(before.version, 0);
          let n = 0;
          // A few interactions until a block trains something (the tiny model's replies are random).
          for (let block = 0; block < 4 && (await run.heldOut(question, 77, 1, 'now')).version === 0; block++) {
            for (let i = 0; i < 2; i++, n++)
              await run.interact(n, openingMessages(persona, 'how do I make tea?'), 1000 + n, (reply) => react(persona, reply, () => 0.5));
            await run.endBlock(n);
          }
          const now = await run.heldOut(question, 77, 3, 'now');
          assert.ok(now.version >= 1, `a version was trained (at v${now.version})`);
          assert.notDeepEqual(now.texts, before.texts, 'the trained version draws otherwise from the same seeds');
          const current = await run.heldOut(question, 77, 3, 'again', now.version);
          assert.deepEqual(current, now, 'the current version asked by number draws what it draws unnamed');
          const pinned = await run.heldOut(question, 77, 3, 'again', 0);
          assert.equal(pinned.version, 0);
          assert.deepEqual(pinned.texts, before.texts, 'version 0, asked by number after training, draws what it drew when current');
        } finally {
          await run.close();
        }
      } finally {
        await models.close();
      }
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  },
);
