/**
 * `turnstream pretrain`: builds the base checkpoint (version 0) of the built-in model from the
 * generated chat corpus (trainer/corpus.ts). By default it writes into the weight store; with
 * `--out policy/builtin/base` it refreshes the checkpoint shipped in the repository.
 */
import { readFile, writeFile } from 'node:fs/promises';
import type { Command } from 'commander';
import { createLogger, invalidInput } from '../../core/index.ts';
import { loadCheckpoint, selectBackend, type BackendName } from '../../policy/index.ts';
import { lossCurveSvg, pretrain, sampleReplies } from '../../trainer/index.ts';
import { loadConfig } from '../config.ts';

export function register(program: Command): void {
  program
    .command('pretrain')
    .description('pretrain the base checkpoint (version 0) of the built-in model on the generated chat corpus')
    .option('--out <dir>', 'weight store root to write v0 into (default TURNSTREAM_WEIGHTS_DIR)')
    .option('--model-id <id>', 'model id', 'turnstream-tiny')
    .option('--minutes <n>', 'time budget; the LR schedule is fitted to it', '12')
    .option('--steps <n>', 'most steps', '3000')
    .option('--batch <n>', 'sequences per step', '16')
    .option('--lr <x>', 'peak learning rate', '3e-3')
    .option('--seed <n>', 'corpus and init seed', '0')
    .option('--loss-csv <file>', 'write the loss curve here')
    .option('--from <dir>', 'continue from this checkpoint folder')
    .option('--backend <name>', 'force a tfjs backend (wasm, cpu, tensorflow, tensorflow-gpu)')
    .option(
      '--names <set>',
      "users' names in the corpus: shipped (the 16 the shipped base saw) or many (thousands, never the held-out ones)",
      'shipped',
    )
    .option('--greet-drill <share>', 'share of extra "Greet me by name." exchanges (a drill phase)', '0')
    .action(
      async (f: {
        out?: string;
        modelId: string;
        minutes: string;
        steps: string;
        batch: string;
        lr: string;
        seed: string;
        lossCsv?: string;
        backend?: string;
        from?: string;
        names: string;
        greetDrill: string;
      }) => {
        const config = loadConfig();
        if (f.names !== 'shipped' && f.names !== 'many') throw invalidInput(`--names must be shipped or many, not "${f.names}"`, '--names');
        const greetDrillShare = Number(f.greetDrill);
        if (!(greetDrillShare >= 0 && greetDrillShare < 1))
          throw invalidInput(`--greet-drill must be a share in [0, 1), not "${f.greetDrill}"`, '--greet-drill');
        const logger = createLogger('pretrain', config.logLevel);
        await selectBackend(f.backend as BackendName | undefined, { logger });
        const res = await pretrain({
          weightsDir: f.out ?? config.weightsDir,
          modelId: f.modelId,
          maxMinutes: Number(f.minutes),
          maxSteps: Number(f.steps),
          batchSize: Number(f.batch),
          lr: Number(f.lr),
          seed: Number(f.seed),
          lossCsv: f.lossCsv,
          from: f.from,
          corpus: { names: f.names, greetDrillShare },
          onProgress: (p) => logger.info(p, 'pretraining'),
        });
        if (f.lossCsv) {
          const rows = (await readFile(f.lossCsv, 'utf8'))
            .trim()
            .split('\n')
            .slice(1)
            .map((l) => l.split(',').map(Number))
            .map(([step, , loss]) => ({ step, loss }));
          await writeFile(f.lossCsv.replace(/\.csv$/, '') + '.svg', lossCurveSvg(rows));
        }
        const { model } = await loadCheckpoint(res.checkpoint.uri);
        const samples = await sampleReplies(model, [
          [{ role: 'user', content: 'how do I make tea?' }],
          [{ role: 'user', content: "Sam here. Tips for better sleep?\n\n[user's hint / instruction]\nGreet me by name." }],
          [
            { role: 'system', content: 'End with a question.' },
            { role: 'user', content: 'what is gravity?' },
          ],
          [{ role: 'user', content: "how do I save money?\n\n[user's hint / instruction]\nKeep it short." }],
        ]);
        model.dispose();
        process.stdout.write(
          JSON.stringify(
            {
              uri: res.checkpoint.uri,
              steps: res.steps,
              seconds: Math.round(res.seconds),
              firstLoss: res.firstLoss,
              finalLoss: res.finalLoss,
              tokens: res.tokens,
              samples,
            },
            null,
            2,
          ) + '\n',
        );
      },
    );
}
