// Builds dist/ for the npm package (package.json `prepack`; `postpack` removes it). Node
// refuses to strip TypeScript types under node_modules, so an installed aigateway cannot run
// its .ts sources as the repository and the image do: the package ships them type-stripped
// as .js (the same erasable-syntax stripping Node does at run time), with every relative
// `.ts` specifier — static and dynamic imports, the log store's worker URL — pointing at the
// .js file. bin/aigateway.js loads dist/ when it runs from node_modules.
//   usage: node --no-warnings bin/build-package.js
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { stripTypeScriptTypes } from 'node:module';
import { dirname, join, relative } from 'node:path';

const ROOT = join(import.meta.dirname, '..');
const DIST = join(ROOT, 'dist');
const SOURCES = ['bin', 'proxy', 'operator'];
// A quoted relative path ending in .ts: './x.ts', "../a/b.ts".
const RELATIVE_TS = /(['"])(\.{1,2}\/[^'"\n]*?)\.ts\1/g;

function* typescriptFiles(dir) {
  for (const entry of readdirSync(dir, { withFileTypes: true })) {
    const path = join(dir, entry.name);
    if (entry.isDirectory()) yield* typescriptFiles(path);
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) yield path;
  }
}

rmSync(DIST, { recursive: true, force: true });
let count = 0;
for (const source of SOURCES) {
  for (const file of typescriptFiles(join(ROOT, source))) {
    const stripped = stripTypeScriptTypes(readFileSync(file, 'utf8'), { mode: 'strip' });
    const target = join(DIST, relative(ROOT, file)).replace(/\.ts$/, '.js');
    mkdirSync(dirname(target), { recursive: true });
    writeFileSync(target, stripped.replace(RELATIVE_TS, '$1$2.js$1'));
    count += 1;
  }
}
process.stdout.write(`dist/: ${count} modules\n`);
