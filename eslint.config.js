import tseslint from 'typescript-eslint';
import { importX, createNodeResolver } from 'eslint-plugin-import-x';

// The modules, for the layer rules below (ARCHITECTURE.md#layers).
const MODULE_FILES = 'src/modules/*/**/*.ts';
// What every module file may not import (a later block for the same files replaces, not adds to, a rule).
const MODULE_RULES = [
  {
    regex: '^\\.\\./[a-z-]+/[^/]+\\.(repository|routes)\\.ts$',
    message: 'A module reaches another only through its service: not its repository or routes.',
  },
  {
    regex: '^\\.\\./\\.\\./(app|server|server-main|cli|cli-main|schema|secrets|runtime/[^/]+)\\.ts$',
    message: 'Modules never import the composition root.',
  },
];

export default tseslint.config(
  {
    ignores: [
      'node_modules/',
      'dist/',
      '.test-bundle-*/',
      'packages/*/dist/',
      'web/dist/',
      'data/',
      'migrations/',
      'bench/results/',
      'bin/',
    ],
  },
  ...tseslint.configs.recommended,
  {
    // The console's sources (web/src, React) are type-checked with web/tsconfig.json, the nearest one.
    files: ['**/*.ts', '**/*.tsx'],
    languageOptions: { parserOptions: { projectService: true, tsconfigRootDir: import.meta.dirname } },
    rules: {
      '@typescript-eslint/no-floating-promises': 'error',
      '@typescript-eslint/no-misused-promises': 'error',
      '@typescript-eslint/no-explicit-any': 'error',
      '@typescript-eslint/no-unused-vars': ['error', { argsIgnorePattern: '^_', varsIgnorePattern: '^_' }],
    },
  },
  // Layers, one way down: the composition root (src/*.ts) knows every module; modules know platform and
  // each other's services; platform knows no module. No import cycles anywhere in src.
  {
    files: ['src/**/*.ts'],
    plugins: { 'import-x': importX },
    settings: {
      'import-x/resolver-next': [createNodeResolver({ extensions: ['.ts', '.js'] })],
      'import-x/extensions': ['.ts', '.js'],
      'import-x/parsers': { '@typescript-eslint/parser': ['.ts'] },
    },
    rules: {
      'import-x/no-cycle': ['error', { ignoreExternal: true }],
    },
  },
  {
    files: ['src/platform/**/*.ts'],
    ignores: ['src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            {
              regex: '(^|/)modules/',
              message: 'platform/ knows no module: pass what it needs in from the composition root.',
            },
            {
              regex: '^(\\.\\./)+(app|server|server-main|cli|cli-main|schema|secrets|runtime/[^/]+)\\.ts$',
              message:
                'platform/ imports no composition file (app, server, cli): take the values as parameters.',
            },
          ],
        },
      ],
    },
  },
  {
    // The configuration is the bottom layer: parsed once from the environment, it imports nothing of ours.
    files: ['src/config.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        { patterns: [{ regex: '^\\.', message: 'config.ts imports nothing of ours.' }] },
      ],
    },
  },
  {
    files: [MODULE_FILES],
    ignores: ['src/**/*.test.ts'],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: MODULE_RULES,
        },
      ],
    },
  },
  {
    // Another module's tables are for SQL: foreign keys (tables files) and read-side joins (repositories).
    files: [MODULE_FILES],
    ignores: [
      'src/**/*.test.ts',
      'src/**/*.tables.ts',
      'src/**/*.repository.ts',
      // Known exceptions (ARCHITECTURE.md#module-layout): the shared invoice-visibility condition, the AR/AP
      // list query builder, and the demo-data seeder that writes every module's rows.
      'src/modules/invoices/invoice-access.ts',
      'src/modules/invoices/invoice-lists.ts',
      'src/modules/seed/seed.service.ts',
    ],
    rules: {
      'no-restricted-imports': [
        'error',
        {
          patterns: [
            ...MODULE_RULES,
            {
              regex: '^\\.\\./[a-z-]+/[^/]+\\.tables\\.ts$',
              message: "Another module's tables are read only in SQL (repositories and tables files).",
            },
            {
              regex: '^drizzle-orm',
              message: 'SQL lives in repositories (*.repository.ts).',
            },
          ],
        },
      ],
    },
  },
);
