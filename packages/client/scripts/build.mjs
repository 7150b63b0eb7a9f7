// Builds dist/ from src/ (npm run build, and npm pack / npm publish through prepack):
//   dist/*.js, dist/*.d.ts         ES modules and their types (tsconfig.json; the package is "type": "module")
//   dist/cjs/*.js, dist/cjs/*.d.ts CommonJS and its types (tsconfig.cjs.json), marked by dist/cjs/package.json
// TypeScript is the repository's root devDependency: it is resolved from here rather than found on PATH,
// so the build runs wherever `npm install` was run at the repository root, from any directory.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import path from 'node:path';

const PACKAGE = path.resolve(import.meta.dirname, '..');
const DIST = path.join(PACKAGE, 'dist');

function tscPath() {
  try {
    const manifest = createRequire(path.join(PACKAGE, 'package.json')).resolve('typescript/package.json');
    return path.join(path.dirname(manifest), 'bin', 'tsc');
  } catch {
    console.error(
      '@remit/client: TypeScript is not installed. Run `npm install` at the root of the Remit repository first.',
    );
    process.exit(1);
  }
}

function compile(tsc, project) {
  return new Promise((resolve, reject) => {
    // stdout too goes to stderr: `npm pack --silent` prints only the tarball's name on stdout.
    const child = spawn(process.execPath, [tsc, '-p', project], {
      cwd: PACKAGE,
      stdio: ['ignore', process.stderr, process.stderr],
    });
    child.on('error', reject);
    child.on('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`tsc -p ${project} failed (${code})`)),
    );
  });
}

/**
 * The sources import each other with `.ts` extensions; tsc rewrites them to `.js` in the JavaScript but
 * leaves them in the declarations. `.js` resolves for every consumer's TypeScript settings.
 */
function rewriteDeclarationImports(dir) {
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const file = path.join(dir, entry.name);
    if (entry.isDirectory()) rewriteDeclarationImports(file);
    else if (entry.name.endsWith('.d.ts')) {
      const text = fs.readFileSync(file, 'utf8');
      const rewritten = text.replace(/(from\s+|import\()(['"])(\.\.?\/[^'"]+)\.ts\2/g, '$1$2$3.js$2');
      if (rewritten !== text) fs.writeFileSync(file, rewritten);
    }
  }
}

const tsc = tscPath();
fs.rmSync(DIST, { recursive: true, force: true });
try {
  await Promise.all([compile(tsc, 'tsconfig.json'), compile(tsc, 'tsconfig.cjs.json')]);
} catch (error) {
  console.error(`@remit/client: ${error.message}`);
  process.exit(1);
}
fs.writeFileSync(
  path.join(DIST, 'cjs', 'package.json'),
  `${JSON.stringify({ type: 'commonjs' }, null, 2)}\n`,
);
rewriteDeclarationImports(DIST);
