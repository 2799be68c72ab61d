// Lint: typescript-eslint's recommended rules over the sources; `npm run lint`.
import tseslint from 'typescript-eslint';

/**
 * The layers, lowest first (docs/design/architecture.md): a folder imports only folders of the
 * layers below its own, never one beside it or above it. Tests (test/) are not layered.
 */
const LAYERS = [
  ['core'],
  ['schemas'],
  // The ClickHouse store (the client, DDL, rows, RowBinary): the sink writes with it, analytics reads.
  ['streams', 'warehouse'],
  ['policy', 'infra', 'integrations'],
  // What eval and gym measure with (checks, statistics, charts): below both, so that they are siblings.
  ['measure'],
  ['gateway', 'processors', 'trainer'],
  // analytics: the queries, the report and the dashboard, read by the CLI only.
  ['history', 'analytics'],
  // The composition root: every service built from one settings object (stack/index.ts).
  ['stack'],
  // Siblings: none imports another (what eval and gym both measure with is in measure/).
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
  warehouse: ['defaults.ts'],
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

/** The import rule of one folder's files: the folders below through their index.ts, none of the others. */
const layered = (from) => ({
  'no-restricted-imports': [
    'error',
    { patterns: FOLDERS.filter((f) => f !== from).map((f) => (layerOf(f) < layerOf(from) ? throughIndex(f) : notUpward(f, from))) },
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
  ...FOLDERS.map((folder) => ({ files: [`${folder}/**/*.ts`], rules: layered(folder) })),
);
