/**
 * The suites turnstream ships (gym/suites/*.jsonl), as the gym reads them: each parses, its ids
 * are unique, every task names its split (train, dev, test). Every verifier tells a done task from an
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
import { isCommandVerify, verifyParts, type Task } from '../../../gym/tasks/task.ts';
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

/** Each part of an answer task's verdict on `reply` (a task with one verifier: that one). */
const partsOf = (task: Task, reply: string): Record<string, boolean> =>
  Object.fromEntries(
    verifyParts(task.verify).map(([name, part]) => {
      assert.ok(!isCommandVerify(part), `${task.id}: an answer task`);
      return [name, explainCheck(part.answer, reply) === null];
    }),
  );
const passes = (task: Task, reply: string): boolean => Object.values(partsOf(task, reply)).every(Boolean);

/** A command's exit status in a fresh folder under `root` with the task's files, after `setup`. */
async function runIn(root: string, task: Task, setup: string | null, command: string): Promise<number | null> {
  const dir = await mkdtemp(join(root, `${task.id}-`));
  for (const [path, content] of Object.entries(task.files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), content);
  }
  if (setup !== null) assert.equal(spawnSync('sh', ['-c', setup], { cwd: dir }).status, 0, setup);
  return spawnSync('sh', ['-c', command], { cwd: dir, timeout: 10_000 }).status;
}

/**
 * formats-and-files: an answer in the form asked for (a bare number or word; yes/no or the word in
 * capitals first), and one with the right content in another form (fails the format).
 */
const STRICT_ANSWERS: Record<string, [exact: string, inASentence: string]> = {
  'yesno-cats-bark': ['No, of course.', 'Of course: no.'],
  'yesno-snow': ['Yes, of course.', 'Of course: yes.'],
  'yesno-birds': ['Yes, of course.', 'Of course: yes.'],
  'yesno-fish-walk': ['No, of course.', 'Of course: no.'],
  'yesno-sun-hot': ['Yes, of course.', 'Of course: yes.'],
  'yesno-stone-soft': ['No, of course.', 'Of course: no.'],
  'yesno-sun-cold': ['No, of course.', 'Of course: no.'],
  'yesno-fire-cold': ['No, of course.', 'Of course: no.'],
  'yesno-ice': ['Yes, of course.', 'Of course: yes.'],
  'list-fruits': ['- apple\n- banana\n- cherry', 'Apple, banana and cherry.'],
  'list-colors': ['- red\n- blue\n- green', 'Red, blue and green.'],
  'list-animals': ['1. dog\n2. cat\n3. cow', 'Dog, cat and cow.'],
  'list-numbers': ['one\ntwo\nthree', 'One, two and three.'],
  'list-days': ['- Monday\n- Tuesday\n- Friday', 'Monday, Tuesday and Friday.'],
  'sum-9-6': ['15', 'I think it is 15.'],
  'sum-5-5': ['**10**', 'I think it is 10.'],
  'sub-10-3': ['7.', 'I think it is 7.'],
  'sides-triangle': ['3', 'A triangle has 3 sides.'],
  'color-sky': ['Blue', 'I think it is blue.'],
  'animal-bark': ['Dog.', 'A dog barks.'],
  'color-grass': ['green', 'Grass is green.'],
  'caps-cat': ['CAT', 'In capitals: CAT'],
  'caps-hello': ['HELLO!', 'In capitals: HELLO'],
  'read-code': ['4721', 'The file says 4721.'],
  'read-pet': ['Rabbit', 'The file says rabbit.'],
};

/** formats-and-files: what a correct agent runs for each file task, and what gets the content right but not the form. */
const FILE_SOLUTIONS: Record<string, [exact: string, contentOnly: string]> = {
  'create-name': ['echo Alice > name.txt', 'echo "name: Alice" > name.txt'],
  'create-date': ['echo 2024 > year.txt', 'echo "The year 2024" > year.txt'],
  'append-list': ['echo cherry >> fruits.txt', 'echo cherry > fruits.txt'],
  'append-todo': ["echo 'call mom' >> todo.txt", "echo 'call mom' > todo.txt"],
  'upper-copy': ['tr a-z A-Z < low.txt > up.txt', 'cp low.txt up.txt'],
  'lower-copy': ['tr A-Z a-z < loud.txt > soft.txt', 'cp loud.txt soft.txt'],
  'delete-old': ['rm old.txt', 'rm old.txt keep.txt'],
};

describe('the shipped task suites', () => {
  for (const name of ['answer-format', 'terminal', 'tool-math']) {
    it(`${name}: parses, unique ids, 16 trained on, 3 dev and 5 test (each task names its split)`, async () => {
      const tasks = await suite(name);
      assert.equal(new Set(tasks.map((t) => t.id)).size, tasks.length);
      assert.ok(
        tasks.every((t) => t.split !== undefined),
        'every task names its split',
      );
      const { train, dev, test } = splitTasks(tasks);
      assert.deepEqual([train.length, dev.length, test.length], [16, 3, 5]);
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
      assert.ok('command' in task.verify);
      return runIn(root, task, setup, task.verify.command);
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

  it('answer-format: each check passes a right answer and fails the question read back, a wrong one and one too long; content and format are parts of their own', async () => {
    const tasks = await suite('answer-format');
    assert.deepEqual(tasks.map((t) => t.id).sort(), Object.keys(RIGHT_ANSWERS).sort());
    for (const task of tasks) {
      assert.deepEqual(partsOf(task, RIGHT_ANSWERS[task.id]), { content: true, format: true }, `${task.id}: ${RIGHT_ANSWERS[task.id]}`);
      const question = `${task.instruction.split('?')[0]}?`;
      assert.ok(!passes(task, question), `${task.id}: the question passes`);
      assert.deepEqual(partsOf(task, 'I do not know.'), { content: false, format: true }, task.id);
      assert.deepEqual(
        partsOf(task, `${RIGHT_ANSWERS[task.id]} And that is really all there is to say about it, I think.`),
        { content: true, format: false },
        `${task.id}: too long`,
      );
    }
  });

  describe('formats-and-files: 16 train, 6 dev, 10 test; every part tells the content from the form; no constant answer pays', () => {
    let root = '';
    before(async () => {
      root = await mkdtemp(join(tmpdir(), 'ts-formats-files-'));
    });
    after(() => rm(root, { recursive: true, force: true }));

    it('splits and kinds', async () => {
      const tasks = await suite('formats-and-files');
      const { train, dev, test } = splitTasks(tasks);
      assert.deepEqual([train.length, dev.length, test.length], [16, 6, 10]);
      assert.deepEqual(tasks.map((t) => t.id).sort(), [...Object.keys(STRICT_ANSWERS), ...Object.keys(FILE_SOLUTIONS)].sort());
      for (const t of tasks)
        assert.deepEqual(
          verifyParts(t.verify).map(([n]) => n),
          ['content', 'format'],
          t.id,
        );
    });

    it('train and dev: as many yes/no tasks want yes as want no, so a constant answer earns nothing', async () => {
      // Seed 1 of the standard run learnt to begin every yes/no reply with "Yes" when two of three train tasks wanted it.
      const { train, dev } = splitTasks(await suite('formats-and-files'));
      for (const [name, split] of [
        ['train', train],
        ['dev', dev],
      ] as const) {
        const yesNo = split.filter((t) => t.id.startsWith('yesno-'));
        const yes = yesNo.filter((t) => passes(t, 'Yes.')).length;
        const no = yesNo.filter((t) => passes(t, 'No.')).length;
        assert.ok(yesNo.length >= 2, `${name} has yes/no tasks`);
        assert.equal(yes + no, yesNo.length, `${name}: each yes/no task passes one of the two`);
        assert.equal(yes, no, `${name}: ${yes} want yes, ${no} want no`);
      }
    });

    it('answer tasks: the exact answer passes both parts; the same in a sentence passes the content only; a wrong bare answer the format only', async () => {
      for (const task of (await suite('formats-and-files')).filter((t) => t.id in STRICT_ANSWERS)) {
        const [exact, sentence] = STRICT_ANSWERS[task.id];
        assert.deepEqual(partsOf(task, exact), { content: true, format: true }, `${task.id}: ${exact}`);
        assert.deepEqual(partsOf(task, sentence), { content: true, format: false }, `${task.id}: ${sentence}`);
        assert.ok(!passes(task, `${task.instruction}`), `${task.id}: the question read back`);
      }
      const byId = new Map((await suite('formats-and-files')).map((t) => [t.id, t]));
      assert.deepEqual(partsOf(byId.get('sum-9-6')!, '14'), { content: false, format: true });
      assert.deepEqual(partsOf(byId.get('color-sky')!, 'Green'), { content: false, format: true });
      assert.deepEqual(partsOf(byId.get('yesno-snow')!, 'No.'), { content: false, format: true });
    });

    it('file tasks: each part fails on the untouched workspace; the exact solution passes both; a near one the content only', async () => {
      for (const task of (await suite('formats-and-files')).filter((t) => t.id in FILE_SOLUTIONS)) {
        const [exact, contentOnly] = FILE_SOLUTIONS[task.id];
        for (const [name, part] of verifyParts(task.verify)) {
          assert.ok(isCommandVerify(part));
          assert.notEqual(await runIn(root, task, null, part.command), 0, `${task.id}.${name}: passes untouched`);
          assert.equal(await runIn(root, task, exact, part.command), 0, `${task.id}.${name}: fails after ${exact}`);
          const near = await runIn(root, task, contentOnly, part.command);
          if (name === 'content') assert.equal(near, 0, `${task.id}.content: fails after ${contentOnly}`);
          else assert.notEqual(near, 0, `${task.id}.format: passes after ${contentOnly}`);
        }
      }
    });
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
