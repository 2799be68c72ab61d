/**
 * `turnstream model pull <spec> [--json]` and `turnstream model list [--json]`: fetch a model
 * into the cache (TURNSTREAM_MODELS_DIR), list the known and cached ones. Progress goes to stderr
 * (a bar on a terminal, plain lines otherwise); results, or exactly one JSON object, to stdout.
 */
import cliProgress from 'cli-progress';
import type { Command } from 'commander';
import { type NativeInstallProgress, listModels, resolveModel, type ModelProgress, type ResolvedModel } from '../../policy/index.ts';
import { loadConfig } from '../config.ts';

const mb = (bytes: number | undefined): string => (bytes === undefined ? '?' : (bytes / 1e6).toFixed(1));

/** Shows resolve progress on `stream`: a cli-progress bar on a TTY, a line per phase and per 10 % otherwise. */
export function progressReporter(stream: NodeJS.WriteStream): {
  onProgress: (p: ModelProgress | NativeInstallProgress) => void;
  stop: () => void;
} {
  let phase: string | undefined;
  let bar: cliProgress.SingleBar | undefined;
  let lastTenth = -1;
  const started = Date.now();
  const stop = (): void => {
    bar?.stop();
    bar = undefined;
  };
  const onProgress = (p: ModelProgress | NativeInstallProgress): void => {
    if (p.retry) {
      stop();
      stream.write(`${p.name}: retry ${p.retry.attempt}: ${p.retry.reason}\n`);
      phase = undefined;
      return;
    }
    if (p.phase !== phase) {
      stop();
      phase = p.phase;
      lastTenth = -1;
      if (p.phase === 'wait') stream.write(`${p.name}: another process is fetching it; waiting\n`);
      else if (p.phase === 'verify') stream.write(`${p.name}: checking (sha256 of ${mb(p.totalBytes)} MB)\n`);
      else if (p.phase === 'build') stream.write(`${p.name}: building (a C++ compile, under a minute)\n`);
      else if (stream.isTTY) {
        bar = new cliProgress.SingleBar(
          { stream, format: `${p.phase.padEnd(8)} |{bar}| {percentage}% | {value_mb}/{total_mb} MB | {speed} MB/s`, hideCursor: true },
          cliProgress.Presets.shades_classic,
        );
        bar.start(Math.max(1, p.totalBytes ?? 1), 0, { value_mb: '0.0', total_mb: mb(p.totalBytes), speed: '0.0' });
      } else stream.write(`${p.name}: ${p.phase} ${mb(p.totalBytes)} MB\n`);
    }
    if (bar) {
      const seconds = Math.max(0.001, (Date.now() - started) / 1000);
      bar.update(p.doneBytes, { value_mb: mb(p.doneBytes), total_mb: mb(p.totalBytes), speed: (p.doneBytes / 1e6 / seconds).toFixed(1) });
    } else if (p.totalBytes && (p.phase === 'download' || p.phase === 'extract')) {
      const tenth = Math.floor((10 * p.doneBytes) / p.totalBytes);
      if (tenth > lastTenth) {
        lastTenth = tenth;
        stream.write(`${p.name}: ${p.phase} ${tenth * 10}% (${mb(p.doneBytes)}/${mb(p.totalBytes)} MB)\n`);
      }
    }
  };
  return { onProgress, stop };
}

function printPulled(m: ResolvedModel, ms: number): void {
  if (m.source === 'builtin') {
    process.stdout.write('builtin: the tiny built-in model needs no file\n');
    return;
  }
  process.stdout.write(`${m.name}\n  path    ${m.path}\n  sha256  ${m.sha256}\n  size    ${mb(m.bytes)} MB\n  id      ${m.modelId}\n`);
  process.stdout.write(`  ${m.downloaded ? `fetched in ${(ms / 1000).toFixed(1)} s` : 'already in the cache'}\n`);
}

export function register(program: Command): void {
  const model = program.command('model').description('get models: fetch one into the cache, list the known and cached ones');

  model
    .command('pull')
    .description('fetch a model into the cache and check its sha256 (resumes an interrupted download)')
    .argument('<spec>', 'a catalog name (smollm2-135m), a path to a .gguf file, or hf:ORG/REPO/FILE.gguf[@REVISION]')
    .option('--json', 'print the result as one JSON object')
    .action(async (spec: string, flags: { json?: boolean }) => {
      const config = loadConfig();
      const progress = progressReporter(process.stderr);
      // Ctrl-C stops cleanly; the partial download stays and the next pull resumes it.
      const abort = new AbortController();
      const onSigint = (): void => abort.abort();
      process.once('SIGINT', onSigint);
      const started = Date.now();
      try {
        const m = await resolveModel(spec, {
          cacheDir: config.model.cacheDir,
          hfEndpoint: config.model.hfEndpoint,
          hfToken: config.model.hfToken,
          onProgress: progress.onProgress,
          signal: abort.signal,
        });
        progress.stop();
        const ms = Date.now() - started;
        if (flags.json) {
          const { catalog: _catalog, ...rest } = m;
          process.stdout.write(`${JSON.stringify({ ...rest, ms })}\n`);
        } else printPulled(m, ms);
      } finally {
        progress.stop();
        process.off('SIGINT', onSigint);
      }
    });

  model
    .command('list')
    .description('the models turnstream knows by name, and those in the cache')
    .option('--json', 'print one JSON object: {"cacheDir", "models": [...]}')
    .action(async (flags: { json?: boolean }) => {
      const { cacheDir } = loadConfig().model;
      const models = await listModels({ cacheDir });
      if (flags.json) {
        process.stdout.write(`${JSON.stringify({ cacheDir, models })}\n`);
        return;
      }
      for (const m of models) {
        const state = m.source === 'builtin' ? 'built in' : m.cached ? `cached, ${mb(m.bytes)} MB` : 'not fetched';
        process.stdout.write(`${m.name.padEnd(16)} ${state.padEnd(18)} ${m.description ?? m.path ?? ''}\n`);
      }
      process.stdout.write(`cache: ${cacheDir}\n`);
    });
}
