// Lint: typescript-eslint's recommended rules over the sources; `npm run lint`.
import tseslint from 'typescript-eslint';

/** Imports run downward only (ARCHITECTURE.md): a folder may not import the folders above it. */
const above = (...folders) => ({
  'no-restricted-imports': [
    'error',
    { patterns: folders.map((f) => ({ group: [`**/${f}/**`], message: `imports run downward: not ${f}/ from here` })) },
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
  { files: ['processors/**/*.ts'], rules: above('gateway', 'trainer', 'history', 'eval', 'cli', 'bench') },
  { files: ['history/**/*.ts'], rules: above('eval', 'cli', 'bench') },
);
