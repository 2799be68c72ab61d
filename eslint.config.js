// Lint: typescript-eslint's recommended rules over the sources; `npm run lint`.
import tseslint from 'typescript-eslint';

/**
 * The layers, lowest first (docs/design/architecture.md): a folder imports only folders of the
 * layers below its own, never one beside it or above it. Tests (test/) are not layered.
 */
const LAYERS = [
  ['core'],
  ['schemas'],
  ['streams'],
  ['policy', 'infra', 'analytics', 'integrations'],
  // What eval and gym measure with (checks, statistics, charts): below both, so that they are siblings.
  ['measure'],
  ['gateway', 'processors', 'trainer'],
  ['history'],
  // The composition root: every service built from one settings object (stack/index.ts).
  ['stack'],
  // Siblings: neither imports the other (what both measure with is in measure/).
  ['eval', 'gym', 'bench'],
  ['cli'],
];
const FOLDERS = LAYERS.flat();
const layerOf = (folder) => LAYERS.findIndex((layer) => layer.includes(folder));

/**
 * Another folder is used through its index.ts only. The other public entries, each kept out of its
 * folder's index.ts because of what that loads: core's OpenAI client (loading `openai` costs
 * ~350 ms and core/index.ts is loaded by every command; the LLM judge, the upstream teacher and the
 * eval's pipeline client import it directly); the Kafka security settings, which cli/config.ts
 * reads for every command (streams/index.ts loads kafkajs and the runtime); and the gym's sandbox
 * probe with the sandbox's defaults (gym/index.ts loads the whole gym, tfjs included; `turnstream
 * doctor` tries the sandbox and starts in under a second).
 */
const PUBLIC_BESIDES_INDEX = {
  core: ['openai-client.ts'],
  streams: ['kafka-security.ts'],
  gym: ['sandbox/detect-sandbox.ts', 'sandbox/sandbox.ts'],
  analytics: ['defaults.ts'],
  gateway: ['defaults.ts'],
  processors: ['defaults.ts'],
  trainer: ['defaults.ts'],
  stack: ['settings.ts', 'served-model.ts'],
};
// (gitignore syntax: a file is re-included only where its folder is not excluded, so each folder
// on the way to a deeper entry is re-included and its other entries excluded again)
const reinclude = (folder, file) => [
  ...file
    .split('/')
    .slice(0, -1)
    .flatMap((_, i, dirs) => [`!**/${folder}/${dirs.slice(0, i + 1).join('/')}`, `**/${folder}/${dirs.slice(0, i + 1).join('/')}/*`]),
  `!**/${folder}/${file}`,
];
const throughIndex = (folder) => ({
  group: [
    ...new Set([`**/${folder}/*`, `!**/${folder}/index.ts`, ...(PUBLIC_BESIDES_INDEX[folder] ?? []).flatMap((f) => reinclude(folder, f))]),
  ],
  message: `another folder is used through its index.ts: import from ${folder}/index.ts`,
});
const notUpward = (folder, from) => ({
  group: [`**/${folder}/**`],
  message: `imports run downward (LAYERS in eslint.config.js): not ${folder}/ from ${from}/`,
});

/**
 * Analytics in two levels: the store (analytics/store/: the client, DDL, rows, RowBinary) below,
 * the queries, report and dashboard on top. Processors (the sink) use the store through its
 * index.ts only; the store imports nothing of the level above it, and of the other folders only
 * core/ and schemas/.
 */
const analyticsStoreOnly = {
  // (gitignore syntax: a file is re-included only where its folder is not excluded)
  group: ['**/analytics/*', '!**/analytics/store', '**/analytics/store/*', '!**/analytics/store/index.ts'],
  message: 'processors use analytics through analytics/store/index.ts only, never its queries, report or dashboard',
};
const aboveTheStore = {
  group: ['../index.ts', '../overview.ts', '../report.ts', '../queries/**', '../dashboard/**', '**/analytics/index.ts'],
  message: 'the analytics store is below the queries, report and dashboard: not them from analytics/store/',
};

/**
 * The import rule of one folder's files: the folders below through their index.ts, none of the
 * others. `layer` places the files lower than their folder (the analytics store, named `label`);
 * `replace` swaps the pattern of one folder for another; `also` adds patterns.
 */
const layered = (from, { layer = layerOf(from), label = from, replace = {}, also = [] } = {}) => ({
  'no-restricted-imports': [
    'error',
    {
      patterns: [
        ...FOLDERS.filter((f) => f !== from).map((f) => replace[f] ?? (layerOf(f) < layer ? throughIndex(f) : notUpward(f, label))),
        ...also,
      ],
    },
  ],
});

export default tseslint.config(
  { ignores: ['node_modules/', '.turnstream/', 'dist/', 'scratch/', 'schemas/avsc/', '**/*.min.js'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'warn',
      // kafkajs loads through streams/kafkajs.ts, which replaces two of its hot paths first.
      '@typescript-eslint/no-restricted-imports': [
        'error',
        {
          paths: [
            {
              name: 'kafkajs',
              allowTypeImports: true,
              message: 'import kafkajs values from streams/index.ts (it loads streams/kafkajs.ts)',
            },
          ],
        },
      ],
    },
  },
  { files: ['streams/kafkajs.ts'], rules: { '@typescript-eslint/no-restricted-imports': 'off' } },
  ...FOLDERS.map((folder) => ({
    files: [`${folder}/**/*.ts`],
    rules: layered(folder, folder === 'processors' ? { replace: { analytics: analyticsStoreOnly } } : {}),
  })),
  // The store sits at streams' layer (core/ and schemas/ only), below the rest of analytics/.
  {
    files: ['analytics/store/**/*.ts'],
    rules: layered('analytics', { layer: layerOf('streams'), label: 'analytics/store', also: [aboveTheStore] }),
  },
);
