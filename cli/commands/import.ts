/**
 * `turnstream import <file> --format openclaw-record|openai-chat [--json]`: a JSONL history into
 * the turns topic (and feedback topic). See history/formats/ for the accepted shapes.
 */
import type { Command } from 'commander';
import cliProgress from 'cli-progress';
import { existsSync } from 'node:fs';
import { endpointsOf, resolveStackOptions } from '../../infra/index.ts';
import { IMPORT_FORMATS, importFile, type ImportFormat, type ImportSummary } from '../../history/index.ts';
import { createEventCodecs, createKafka, ensureTopics, parseBrokers } from '../../streams/index.ts';
import { createLogger } from '../../core/index.ts';
import { loadConfig } from '../config.ts';

const HELP = `
Formats (one JSON object per line; every line is validated, a bad line is reported with its
number and reason and the import goes on):

  openclaw-record  OpenClaw-RL's per-turn record file (OPENCLAW_RECORD_FILE):
    {"session_id": "s1", "turn": 1, "timestamp": "2026-02-14 20:00:00",
     "messages": [{"role": "user", "content": "hi"}],
     "response_text": "Hello!<|im_end|>", "tool_calls": null,
     "next_state": {"role": "user", "content": "thanks"}}
    also: "response" (an assistant message or a string) instead of "response_text",
    "turn_type" (main|side, default main), "session_done", "user_id", "model", "tools",
    "usage", explicit feedback as "feedback" ({"rating": 1|-1, "text": …} or a list),
    "rating", or "label": -1. "next_state" is the turn's next state when no later record
    of the session follows; "next_state": null marks the session's end. Timestamps:
    epoch ms/s, ISO-8601, or "YYYY-MM-DD HH:MM:SS" (read as UTC).

  openai-chat      one conversation per line:
    {"messages": [{"role": "system", …}, {"role": "user", …}, {"role": "assistant", …}, …],
     "session_id"?: "s1", "user"?: "alice", "timestamp"?: "2026-02-14T20:00:00Z"}
    every assistant message is one turn whose request is the history before it;
    what the next turn adds after it (the user's reply, tool results) is its next state, and
    the messages after the last one (the user's last word) are the last turn's next state;
    an assistant message may carry "feedback"/"rating" and its own "timestamp".

Imported turns keep their original times, have sessionSource=IMPORTED and tokenized=false (no
engine token ids exist for history, and turnstream never re-tokenizes for training): they are
paired and judged (by a replay, which judges untokenized turns), never trained token-level.
Ids are deterministic (session + turn index + content): importing a file twice adds nothing.
`;

/** One summary line, then each rejected line with its reason. */
export function summaryText(s: ImportSummary): string {
  const turns = s.imported + s.duplicates;
  const feedback =
    s.feedbackImported || s.feedbackDuplicates ? `; feedback: ${s.feedbackImported} imported, ${s.feedbackDuplicates} duplicates` : '';
  const lines = [
    `read ${s.read} lines: ${s.conversations} conversations, ${turns} turns, ${s.nextStates} next states (${s.imported} turns imported, ${s.duplicates} duplicates), ${s.rejected} lines rejected${feedback}`,
    ...s.errors.map((e) => `  line ${e.line}: ${e.reason}`),
  ];
  return `${lines.join('\n')}\n`;
}

export function register(program: Command): void {
  program
    .command('import')
    .description('import historical sessions (JSONL) into the turns topic')
    .argument('<file>', 'JSONL file')
    .requiredOption('--format <format>', IMPORT_FORMATS.join(' | '))
    .option('--json', 'print the summary as one JSON object')
    .option('--batch-size <n>', 'events per produce request', '500')
    .addHelpText('after', HELP)
    .action(async (file: string, flags: { format: string; json?: boolean; batchSize: string }) => {
      if (!(IMPORT_FORMATS as readonly string[]).includes(flags.format)) {
        process.stderr.write(`turnstream import: unknown format "${flags.format}"; expected ${IMPORT_FORMATS.join(' or ')}\n`);
        process.exitCode = 2;
        return;
      }
      if (!existsSync(file)) {
        process.stderr.write(`turnstream import: no such file: ${file}\n`);
        process.exitCode = 2;
        return;
      }
      const config = loadConfig();
      const endpoints = endpointsOf(
        resolveStackOptions({ home: config.home, kafkaBrokers: config.kafkaBrokers, schemaRegistryUrl: config.schemaRegistryUrl }),
      );
      const kafka = createKafka({
        brokers: parseBrokers(endpoints.brokers),
        clientId: 'turnstream-import',
        security: config.security.kafka,
      });
      const naming = { prefix: config.topicPrefix };
      await ensureTopics(kafka, { naming, ids: ['turns', 'feedback'] });
      const codecs = await createEventCodecs({ registryUrl: endpoints.registryUrl, registrySecurity: config.security.registry, naming });
      const bar = new cliProgress.SingleBar(
        {
          stream: process.stderr,
          format: 'import |{bar}| {percentage}% | {lines} lines | {imported} imported | {duplicates} dup | {rejected} rejected',
          hideCursor: true,
        },
        cliProgress.Presets.shades_classic,
      );
      let started = false;
      const summary = await importFile({
        kafka,
        codecs,
        file,
        format: flags.format as ImportFormat,
        batchSize: Number(flags.batchSize) || 500,
        logger: createLogger('import', config.logLevel),
        onProgress: (p) => {
          const payload = { lines: p.lines, imported: p.imported, duplicates: p.duplicates, rejected: p.rejected };
          if (!started) {
            bar.start(Math.max(1, p.totalBytes), p.bytesRead, payload);
            started = true;
          } else bar.update(p.bytesRead, payload);
        },
      });
      if (started) bar.stop();
      if (flags.json) process.stdout.write(`${JSON.stringify(summary)}\n`);
      else process.stdout.write(summaryText(summary));
    });
}
