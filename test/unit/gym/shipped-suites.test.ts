/**
 * The suites turnstream ships (gym/suites/*.jsonl), as the gym reads them: each parses, its ids
 * are unique, 16 tasks are trained on and 8 held out. Every verifier tells a done task from an
 * undone one: a command fails on the untouched workspace and passes once the task is done (run
 * with sh in a folder holding the task's files, no model); an answer check passes a right answer,
 * in the words a model uses and as Python prints it, and fails a wrong one, one too long and the
 * question read back.
 */
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import { mkdir, mkdtemp, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { dirname, join } from 'node:path';
import { after, before, describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { loadTaskSuite } from '../../../gym/tasks/parse-task-suite.ts';
import { splitTasks } from '../../../gym/tasks/split-tasks.ts';
import { isCommandVerify, type Task } from '../../../gym/tasks/task.ts';
import { explainCheck } from '../../../gym/verify/verify-rollout.ts';

const SUITES = fileURLToPath(new URL('../../../gym/suites/', import.meta.url));
const suite = (name: string): Promise<Task[]> => loadTaskSuite(join(SUITES, `${name}.jsonl`));

/** What a correct agent runs for each terminal task. */
const TERMINAL_SOLUTIONS: Record<string, string> = {
  'cp-notes': 'cp notes.txt backup.txt',
  'touch-ready': 'touch ready.txt',
  'rm-junk': 'rm junk.txt',
  'mkdir-docs': 'mkdir docs',
  'mv-old': 'mv old.txt new.txt',
  'echo-apple': 'echo apple > fruit.txt',
  'cp-config': 'cp config.ini config.bak',
  'touch-log': 'touch app.log',
  'rm-cache': 'rm cache.tmp',
  'mkdir-output': 'mkdir output',
  'mv-draft': 'mv draft.md final.md',
  'echo-hello': 'echo hello > greeting.txt',
  'cp-data': 'cp data.csv data_copy.csv',
  'touch-flag': 'touch done.flag',
  'rm-log': 'rm old.log',
  'mkdir-src': 'mkdir src',
  'cp-report': 'cp report.txt report_old.txt',
  'touch-lock': 'touch app.lock',
  'rm-trash': 'rm trash.txt',
  'mkdir-logs': 'mkdir logs',
  'mv-temp': 'mv temp.txt keep.txt',
  'echo-blue': 'echo blue > color.txt',
  'cp-list': 'cp list.txt list2.txt',
  'mkdir-images': 'mkdir images',
};

/** A right answer to each answer-format question, in a model's words. */
const RIGHT_ANSWERS: Record<string, string> = {
  'capital-france': 'The capital of France is Paris.',
  'capital-italy': 'Rome.',
  'largest-ocean': 'The Pacific Ocean.',
  'sky-color': 'It is blue.',
  'spain-language': 'They speak Spanish.',
  'italy-language': 'Italian.',
  'opposite-hot': 'Cold.',
  'opposite-wet': 'The opposite of wet is dry.',
  'spider-legs': 'A spider has eight legs.',
  'day-hours': 'There are 24 hours in a day.',
  'water-boils': 'Water boils at 100 degrees Celsius.',
  'fish-breathe': 'Fish breathe with their gills.',
  'frozen-water': 'Frozen water is called ice.',
  'water-symbol': 'H2O.',
  'baby-cat': 'A baby cat is a kitten.',
  'romeo-author': 'William Shakespeare wrote it.',
  'france-language': 'French.',
  'germany-language': 'People in Germany speak German.',
  'opposite-up': 'Down.',
  'tomato-color': 'A ripe tomato is red.',
  'week-days': 'There are seven days in a week.',
  'tallest-mountain': 'Mount Everest.',
  'moon-orbit': 'The Moon orbits the Earth.',
  'after-winter': 'Spring comes after winter.',
};

/** The tool-math question's answer, as Python prints it (`/` gives a float). */
function pythonAnswer(instruction: string): string {
  const [a, b] = (instruction.match(/\d+/g) ?? []).map(Number);
  if (/ \+ /.test(instruction)) return String(a + b);
  if (/ - /.test(instruction)) return String(a - b);
  if (/ times /.test(instruction)) return String(a * b);
  if (/ to the power of /.test(instruction)) return String(a ** b);
  if (/ squared/.test(instruction)) return String(a * a);
  if (/ divided by /.test(instruction)) return (a / b).toFixed(1);
  throw new Error(`no operation in ${JSON.stringify(instruction)}`);
}

const passes = (task: Task, reply: string): boolean => {
  assert.ok(!isCommandVerify(task.verify));
  return explainCheck(task.verify.answer, reply) === null;
};

describe('the shipped task suites', () => {
  for (const name of ['answer-format', 'terminal', 'tool-math']) {
    it(`${name}: parses, unique ids, 16 trained on and 8 held out (each task names its split)`, async () => {
      const tasks = await suite(name);
      assert.equal(new Set(tasks.map((t) => t.id)).size, tasks.length);
      assert.ok(
        tasks.every((t) => t.split !== undefined),
        'every task names its split',
      );
      const { train, eval: held } = splitTasks(tasks);
      assert.deepEqual([train.length, held.length], [16, 8]);
    });
  }

  describe('terminal: each command verifier fails on the untouched workspace and passes once the task is done', () => {
    let root = '';
    before(async () => {
      root = await mkdtemp(join(tmpdir(), 'ts-shipped-suites-'));
    });
    after(() => rm(root, { recursive: true, force: true }));

    /** The verifier's exit status in a fresh folder with the task's files, after `setup`. */
    const verify = async (task: Task, setup: string | null): Promise<number | null> => {
      assert.ok(isCommandVerify(task.verify));
      const dir = await mkdtemp(join(root, `${task.id}-`));
      for (const [path, content] of Object.entries(task.files)) {
        await mkdir(dirname(join(dir, path)), { recursive: true });
        await writeFile(join(dir, path), content);
      }
      if (setup !== null) assert.equal(spawnSync('sh', ['-c', setup], { cwd: dir }).status, 0, setup);
      return spawnSync('sh', ['-c', task.verify.command], { cwd: dir, timeout: 10_000 }).status;
    };

    it('all 24', async () => {
      const tasks = await suite('terminal');
      assert.deepEqual(tasks.map((t) => t.id).sort(), Object.keys(TERMINAL_SOLUTIONS).sort());
      for (const task of tasks) {
        assert.notEqual(await verify(task, null), 0, `${task.id}: passes untouched`);
        assert.equal(await verify(task, TERMINAL_SOLUTIONS[task.id]), 0, `${task.id}: fails after ${TERMINAL_SOLUTIONS[task.id]}`);
      }
    });

    it('a copy is not a rename, nor a rename a copy', async () => {
      const tasks = new Map((await suite('terminal')).map((t) => [t.id, t]));
      assert.notEqual(await verify(tasks.get('cp-notes')!, 'mv notes.txt backup.txt'), 0);
      assert.notEqual(await verify(tasks.get('cp-data')!, 'echo x > data_copy.csv'), 0);
      assert.notEqual(await verify(tasks.get('mv-old')!, 'cp old.txt new.txt'), 0);
      assert.notEqual(await verify(tasks.get('mv-temp')!, 'rm temp.txt; touch keep.txt'), 0);
    });
  });

  it('answer-format: each check passes a right answer and fails the question read back, a wrong one and one too long', async () => {
    const tasks = await suite('answer-format');
    assert.deepEqual(tasks.map((t) => t.id).sort(), Object.keys(RIGHT_ANSWERS).sort());
    for (const task of tasks) {
      assert.ok(passes(task, RIGHT_ANSWERS[task.id]), `${task.id}: ${RIGHT_ANSWERS[task.id]}`);
      const question = `${task.instruction.split('?')[0]}?`;
      assert.ok(!passes(task, question), `${task.id}: the question passes`);
      assert.ok(!passes(task, 'I do not know.'), task.id);
      assert.ok(
        !passes(task, `${RIGHT_ANSWERS[task.id]} And that is really all there is to say about it, I think.`),
        `${task.id}: too long`,
      );
    }
  });

  it('tool-math: each check passes the answer in words, as Python prints it and with a thousands separator; never a near miss or the question', async () => {
    const tasks = await suite('tool-math');
    assert.equal(tasks.length, 24);
    for (const task of tasks) {
      const x = pythonAnswer(task.instruction);
      const n = Number(x);
      for (const right of [
        `The answer is ${x}.`,
        `${x}`,
        `${Number.isInteger(n) ? n.toFixed(1) : x}`,
        `It is ${n.toLocaleString('en-US')}!`,
      ])
        assert.ok(passes(task, right), `${task.id}: ${right}`);
      for (const wrong of [task.instruction, `The answer is ${n + 1}.`, `${n * 10}`, `${n}.5`, `1${n}`])
        assert.ok(!passes(task, wrong), `${task.id}: ${wrong}`);
    }
  });
});
