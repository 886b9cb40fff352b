// The floor table of docs/architecture.md, enforced: code on a floor imports only from its
// own floor or those below it. Every import of every proxy/**/*.ts file is read — value and
// type imports, re-exports and dynamic imports alike — and resolved to the file it names;
// an import of a file on a higher floor is a climb, and any climb fails the test.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { dirname, join, relative, resolve } from 'node:path';
import { describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '../..');

interface Floor {
  readonly level: number;
  readonly prefix: string;
}

/** The table's rows: each backticked path in the folders column with its floor number. */
export function floorsOf(markdown: string): Floor[] {
  const floors: Floor[] = [];
  for (const line of markdown.split('\n')) {
    const row = /^\|\s*(\d+)\s*—[^|]*\|([^|]*)\|/.exec(line);
    if (row === null) continue;
    const level = Number(row[1]);
    for (const match of (row[2] ?? '').matchAll(/`([^`]+)`/g)) {
      const path = match[1] ?? '';
      if (path.startsWith('proxy/') || path.startsWith('bin/')) floors.push({ level, prefix: path });
    }
  }
  return floors;
}

/** The floor of a file: its longest matching prefix (a file named on a floor beats its folder). */
function floorOf(file: string, floors: readonly Floor[]): number | undefined {
  let best: Floor | undefined;
  for (const floor of floors) {
    const matches = floor.prefix.endsWith('/') ? file.startsWith(floor.prefix) : file === floor.prefix;
    if (matches && (best === undefined || floor.prefix.length > best.prefix.length)) best = floor;
  }
  return best?.level;
}

function sourceFiles(dir: string): string[] {
  const files: string[] = [];
  for (const entry of readdirSync(join(ROOT, dir), { withFileTypes: true })) {
    const path = `${dir}/${entry.name}`;
    if (entry.isDirectory()) files.push(...sourceFiles(path));
    else if (entry.name.endsWith('.ts') && !entry.name.endsWith('.d.ts')) files.push(path);
  }
  return files;
}

// `import … from '…'`, `import type … from '…'`, `export … from '…'`, `import '…'`, `import('…')`.
const IMPORT = /(?:^|[\s;])(?:import|export)\s+(?:type\s+)?(?:[^'";]*?\s+from\s+)?['"]([^'"]+)['"]|import\(\s*['"]([^'"]+)['"]\s*\)/g;

export function importsOf(source: string): string[] {
  const specifiers: string[] = [];
  // Comments may quote imports; they are not code.
  const code = source.replace(/\/\*[\s\S]*?\*\//g, '').replace(/(^|[^:'"`])\/\/.*$/gm, '$1');
  for (const match of code.matchAll(IMPORT)) {
    const specifier = match[1] ?? match[2];
    if (specifier !== undefined && specifier.startsWith('.')) specifiers.push(specifier);
  }
  return specifiers;
}

interface Climb {
  readonly importer: string;
  readonly imported: string;
  readonly from: number;
  readonly to: number;
}

function climbs(): { climbs: Climb[]; unassigned: string[] } {
  const floors = floorsOf(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
  const found: Climb[] = [];
  const unassigned = new Set<string>();
  for (const file of sourceFiles('proxy')) {
    const from = floorOf(file, floors);
    if (from === undefined) {
      unassigned.add(file);
      continue;
    }
    for (const specifier of importsOf(readFileSync(join(ROOT, file), 'utf8'))) {
      const imported = relative(ROOT, resolve(ROOT, dirname(file), specifier));
      const to = floorOf(imported, floors);
      if (to !== undefined && to > from) found.push({ importer: file, imported, from, to });
    }
  }
  return { climbs: found, unassigned: [...unassigned] };
}

describe('import floors (docs/architecture.md)', () => {
  test('the table is read: every floor from 1 to 7 names folders', () => {
    const floors = floorsOf(readFileSync(join(ROOT, 'docs/architecture.md'), 'utf8'));
    assert.deepEqual([...new Set(floors.map((floor) => floor.level))].sort(), [1, 2, 3, 4, 5, 6, 7]);
    assert.equal(floorOf('proxy/accounting/price-table.ts', floors), 1, 'a file named on a floor beats its folder');
    assert.equal(floorOf('proxy/accounting/request-cost.ts', floors), 5);
  });

  test('the parser sees value, type, re-export and dynamic imports, not comments', () => {
    const source = [
      "import { a } from './a.ts';",
      "import type { B } from '../b/b.ts';",
      "export { c } from './c.ts';",
      "export type { D } from './d.ts';",
      "const e = await import('./e.ts');",
      "import './f.ts';",
      "// import { g } from './g.ts';",
      "import { h } from 'node:fs';",
    ].join('\n');
    assert.deepEqual(importsOf(source), ['./a.ts', '../b/b.ts', './c.ts', './d.ts', './e.ts', './f.ts']);
  });

  test('no import climbs a floor', (t) => {
    const { climbs: found, unassigned } = climbs();
    // Folders the table does not name are not checked; say which.
    const folders = [...new Set(unassigned.map((file) => file.split('/').slice(0, 2).join('/')))];
    if (folders.length > 0) t.diagnostic(`not on any floor (unchecked): ${folders.join(', ')}`);
    assert.deepEqual(
      found.map((climb) => `${climb.importer} (floor ${climb.from}) -> ${climb.imported} (floor ${climb.to})`),
      [],
      'upward imports: import from a lower floor, move the code down, or pass it in from above',
    );
  });
});
