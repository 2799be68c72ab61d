// Lint: typescript-eslint's recommended rules over the sources; `npm run lint`.
import tseslint from 'typescript-eslint';

export default tseslint.config(
  { ignores: ['node_modules/', '.turnstream/', 'dist/', 'schemas/avsc/', '**/*.min.js'] },
  ...tseslint.configs.recommended,
  {
    rules: {
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_', caughtErrors: 'none' }],
      '@typescript-eslint/no-explicit-any': 'warn',
    },
  },
);
