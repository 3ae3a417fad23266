import reactHooks from 'eslint-plugin-react-hooks';
import tseslint from 'typescript-eslint';

export default tseslint.config(
  // Build output (dist/, made by `npm install`) and test artefacts are not sources.
  { ignores: ['node_modules/**', 'data/**', 'coverage/**', 'dist/**', 'test-results/**'] },
  ...tseslint.configs.recommended,
  {
    files: ['**/*.ts'],
    languageOptions: {
      parserOptions: { projectService: { allowDefaultProject: ['vitest.config.ts'] }, tsconfigRootDir: import.meta.dirname },
    },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // The web console (web/src, Preact; web/server has its own tsconfig, found by the project service): type-aware against web/tsconfig.json, with the hooks rules
  // (Preact's hooks follow React's rules: same order every render, complete dependency lists).
  {
    files: ['web/src/**/*.ts', 'web/src/**/*.tsx'],
    languageOptions: {
      parserOptions: { project: './web/tsconfig.json', projectService: false, tsconfigRootDir: import.meta.dirname },
    },
    plugins: { 'react-hooks': reactHooks },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/switch-exhaustiveness-check': 'error',
      '@typescript-eslint/no-explicit-any': 'off',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
      'react-hooks/rules-of-hooks': 'error',
      // A warning, as the plugin's recommended set has it: some effects run on purpose for one value only.
      'react-hooks/exhaustive-deps': 'warn',
    },
  },
);
