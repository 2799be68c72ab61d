/**
 * Does a model copy the user's name from the prompt when it greets by name? For names of the
 * corpus, held-out real names ("Sam" among them) and unseen generated three-syllable names, on
 * the eval's held-out topics, with the "Greet me by name." hint and on plain "NAME here. …"
 * prompts: the share of replies that greet by some name, and of those, the share that use the
 * prompt's name. Also the base rates of the five persona preferences and the share of replies
 * that end with `<|end|>`, so a new base can be compared with an old one on more than names.
 *
 *   node --import tsx eval/name-copy.ts <checkpoint dir> [samples per prompt]
 */
import { pathToFileURL } from 'node:url';
import { selectBackend, loadCheckpoint, type TransformerModel, sampleMany, ByteTokenizer } from '../policy/index.ts';
import { HELD_OUT_NAMES, HINT_HEADER, REAL_NAMES, TOPICS, type Topic } from '../trainer/index.ts';
import { mulberry32 } from '../core/index.ts';
import { BUILTIN_PERSONAS_FILE, loadPersonas, openingMessages, splitPrompts } from './persona.ts';
import { promptIds } from './turn-pair.ts';

/** A greeting and the word after it: "Hi Sam!" → "Sam". */
const GREETING = /^(?:hi|hello|hey|dear|good (?:morning|day))\b[ ,]*([\p{L}]+)/iu;

export interface NameCopyRow {
  group: string;
  prompt: 'hint' | 'plain';
  replies: number;
  /** Replies that start with a greeting and a name. */
  greeted: number;
  /** Of those, the ones whose name is the prompt's. */
  copied: number;
  /** Of those, the ones whose name starts with the prompt name's first letter (a partial copy). */
  firstLetter: number;
}

/** Three-syllable names, a shape the corpus never has (its generated names have two syllables). */
export function unseenNames(n: number, seed = 99): string[] {
  const rand = mulberry32(seed);
  const on = ['b', 'd', 'k', 'l', 'm', 'n', 'p', 'r', 's', 't', 'v', 'z'];
  const vo = ['a', 'e', 'i', 'o', 'u'];
  const pick = <T>(l: T[]): T => l[Math.floor(rand() * l.length)];
  return Array.from({ length: n }, () => {
    const s = pick(on) + pick(vo) + pick(on) + pick(vo) + pick(on) + pick(vo);
    return s.charAt(0).toUpperCase() + s.slice(1);
  });
}

/** The corpus topics the name check asks about: every 4th, 8 in all (those the old topic split held out). */
const heldOutTopics = (): Topic[] => TOPICS.filter((_, i) => i % 4 === 3).slice(0, 8);

export async function nameCopy(model: TransformerModel, samples = 2, seed = 1): Promise<NameCopyRow[]> {
  const heldOut = heldOutTopics();
  const groups: Record<string, string[]> = {
    'corpus names': REAL_NAMES.slice(0, 16),
    'held-out real names': HELD_OUT_NAMES,
    'unseen generated names': unseenNames(12),
  };
  const rows: NameCopyRow[] = [];
  for (const [group, names] of Object.entries(groups)) {
    for (const kind of ['hint', 'plain'] as const) {
      const row: NameCopyRow = { group, prompt: kind, replies: 0, greeted: 0, copied: 0, firstLetter: 0 };
      for (const [i, name] of names.entries()) {
        const topic: Topic = heldOut[i % heldOut.length];
        let user = `${name} here. ${topic.asks[i % 2]}`;
        if (kind === 'hint') user += HINT_HEADER + 'Greet me by name.';
        const ids = promptIds(model, [{ role: 'user', content: user }]);
        for (const r of await sampleMany(model, ids, samples, { seed: seed * 7919 + i, maxTokens: 24 })) {
          row.replies++;
          const m = GREETING.exec(r.text.trim());
          if (m && /^\p{Lu}/u.test(m[1])) {
            row.greeted++;
            if (m[1] === name) row.copied++;
            if (m[1][0] === name[0]) row.firstLetter++;
          }
        }
      }
      rows.push(row);
    }
  }
  return rows;
}

/** Version-0 satisfaction of each builtin persona on its held-out prompts, and the share ending with `<|end|>`. */
export async function baseRates(model: TransformerModel, samples = 4, seed = 1): Promise<Record<string, number>> {
  const end = new ByteTokenizer().end;
  const out: Record<string, number> = {};
  let ended = 0;
  let n = 0;
  for (const persona of await loadPersonas(BUILTIN_PERSONAS_FILE)) {
    let ok = 0;
    let k = 0;
    for (const [j, prompt] of splitPrompts(persona).heldOut.entries()) {
      const ids = promptIds(model, openingMessages(persona, prompt));
      for (const r of await sampleMany(model, ids, samples, { seed: seed * 7919 + j })) {
        if (persona.accepts(r.text)) ok++;
        if (r.ids.at(-1) === end) ended++;
        k++;
        n++;
      }
    }
    out[persona.name] = ok / k;
  }
  out.endsWithEnd = ended / n;
  return out;
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) {
  const dir = process.argv[2];
  if (!dir) throw new Error('usage: name-copy.ts <checkpoint dir> [samples]');
  const samples = Number(process.argv[3] ?? 4);
  await selectBackend('wasm');
  const { model } = await loadCheckpoint(dir);
  const t0 = performance.now();
  const rows = await nameCopy(model, samples);
  for (const r of rows)
    console.log(
      `${r.group.padEnd(24)} ${r.prompt.padEnd(6)} replies ${r.replies}  greet by a name ${(r.greeted / r.replies).toFixed(2)}  ` +
        `prompt's name ${r.copied}/${r.greeted} (${r.greeted ? (r.copied / r.greeted).toFixed(2) : '-'})  its first letter ${r.firstLetter}/${r.greeted}`,
    );
  console.log(JSON.stringify(await baseRates(model, samples)));
  console.log(`${((performance.now() - t0) / 1000).toFixed(0)} s`);
  model.dispose();
}
