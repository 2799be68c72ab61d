// Lint: typescript-eslint's recommended rules over the sources; `npm run lint`.
import tseslint from 'typescript-eslint';

/** Imports run downward only (ARCHITECTURE.md): a folder may not import the folders above it. */
const above = (...folders) => ({
  'no-restricted-imports': [
    'error',
    { patterns: folders.map((f) => ({ group: [`**/${f}/**`], message: `imports run downward: not ${f}/ from here` })) },
  ],
});

/**
 * Analytics in two levels: the store (analytics/store/: the client, DDL, rows, RowBinary) below,
 * the queries, report and dashboard on top. Processors (the sink) use the store through its
 * index.ts only; the store imports nothing of the level above it.
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
/** `above(...)` with more restricted patterns. */
const aboveAnd = (folders, ...patterns) => {
  const [level, options] = above(...folders)['no-restricted-imports'];
  return { 'no-restricted-imports': [level, { patterns: [...options.patterns, ...patterns] }] };
};

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
        { paths: [{ name: 'kafkajs', allowTypeImports: true, message: 'import kafkajs values from streams/kafkajs.ts' }] },
      ],
    },
  },
  { files: ['streams/kafkajs.ts'], rules: { '@typescript-eslint/no-restricted-imports': 'off' } },
  {
    files: ['core/**/*.ts'],
    rules: above(
      'schemas',
      'streams',
      'infra',
      'analytics',
      'policy',
      'gateway',
      'processors',
      'trainer',
      'history',
      'eval',
      'integrations',
      'cli',
      'bench',
    ),
  },
  { files: ['policy/**/*.ts'], rules: above('gateway', 'processors', 'trainer', 'history', 'eval', 'analytics', 'cli', 'bench') },
  { files: ['gateway/**/*.ts'], rules: above('processors', 'trainer', 'history', 'eval', 'cli', 'bench') },
  { files: ['processors/**/*.ts'], rules: aboveAnd(['gateway', 'trainer', 'history', 'eval', 'cli', 'bench'], analyticsStoreOnly) },
  {
    files: ['analytics/**/*.ts'],
    rules: above('gateway', 'processors', 'trainer', 'history', 'eval', 'gym', 'integrations', 'cli', 'bench'),
  },
  {
    files: ['analytics/store/**/*.ts'],
    rules: aboveAnd(
      ['streams', 'policy', 'gateway', 'processors', 'trainer', 'history', 'eval', 'gym', 'integrations', 'infra', 'cli', 'bench'],
      aboveTheStore,
    ),
  },
  { files: ['history/**/*.ts'], rules: above('eval', 'cli', 'bench') },
);
