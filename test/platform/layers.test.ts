import { ESLint } from 'eslint';
import { describe, expect, it } from 'vitest';

// The layer rules live in eslint.config.js (ARCHITECTURE.md#layers); this proves they bite, so that a
// config edit cannot silently turn them off (`npm run lint` checks the tree itself). Type-aware parsing is switched off: these rules need none.
const eslint = new ESLint({
  cwd: new URL('../..', import.meta.url).pathname,
  overrideConfig: { languageOptions: { parserOptions: { projectService: false, project: null } } },
  ruleFilter: ({ ruleId }) => ruleId === 'no-restricted-imports' || ruleId === 'import-x/no-cycle',
});

async function problems(filePath: string, code: string): Promise<string[]> {
  const [result] = await eslint.lintText(code, { filePath });
  return result!.messages.map((m) => `${m.ruleId}: ${m.message}`);
}

describe('layers, one way down', () => {
  it('platform/ importing a module fails lint', async () => {
    const found = await problems(
      'src/platform/http/probe.ts',
      "import { getInvoice } from '../../modules/invoices/invoices.service.ts';\nexport const x = getInvoice;\n",
    );
    expect(found.join('\n')).toMatch(/platform\/ knows no module/);
  });

  it('platform/ importing the composition root fails lint, from any depth', async () => {
    for (const [file, path] of [
      ['src/platform/probe.ts', '../app.ts'],
      ['src/platform/http/probe.ts', '../../app.ts'],
    ]) {
      const found = await problems(
        file!,
        `import { buildApp } from '${path}';\nexport const x = buildApp;\n`,
      );
      expect(found.join('\n')).toMatch(/composition file/);
    }
  });

  it("a module reaching another module's repository or routes fails lint", async () => {
    const repo = await problems(
      'src/modules/search/probe.ts',
      "import { findAgent } from '../agents/agents.repository.ts';\nexport const x = findAgent;\n",
    );
    expect(repo.join('\n')).toMatch(/only through its service/);
    const routes = await problems(
      'src/modules/search/probe.ts',
      "import { agentRoutes } from '../agents/agents.routes.ts';\nexport const x = agentRoutes;\n",
    );
    expect(routes.join('\n')).toMatch(/only through its service/);
  });

  it('SQL outside a repository fails lint; a repository may write it', async () => {
    const code = "import { sql } from 'drizzle-orm';\nexport const x = sql`select 1`;\n";
    expect((await problems('src/modules/search/search.service.ts', code)).join('\n')).toMatch(
      /SQL lives in repositories/,
    );
    expect(await problems('src/modules/search/search.repository.ts', code)).toEqual([]);
  });

  it('a module importing another module through its service passes', async () => {
    const found = await problems(
      'src/modules/search/probe.ts',
      "import { findAgent } from '../agents/agents.service.ts';\nexport const x = findAgent;\n",
    );
    expect(found).toEqual([]);
  });
});
