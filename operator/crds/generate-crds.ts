#!/usr/bin/env node
// Writes the CRDs generated from the zod schemas into crds/ and the Helm chart's crds/.
//   npm run crds            write the files
//   npm run crds -- --check exit 1 (listing the files) when the checked-in files differ
import { mkdirSync, readFileSync, readdirSync, writeFileSync } from 'node:fs';
import { dirname, join, resolve } from 'node:path';
import { fileURLToPath } from 'node:url';
import { renderCrdFiles } from './crd-manifests.ts';

const ROOT = resolve(dirname(fileURLToPath(import.meta.url)), '..', '..');
/** Every directory that holds a copy of the generated CRDs. */
export const CRD_DIRS = [join(ROOT, 'crds'), join(ROOT, 'charts', 'aigateway', 'crds')];

/** Files that differ from the generator's output (missing, changed, or stale extras). */
export function driftedCrdFiles(): string[] {
  const expected = renderCrdFiles();
  const drifted: string[] = [];
  for (const dir of CRD_DIRS) {
    let present: string[] = [];
    try {
      present = readdirSync(dir).filter((name) => name.endsWith('.yaml'));
    } catch {
      // a missing directory: every file is missing
    }
    for (const { file, yaml } of expected) {
      let actual: string | undefined;
      try {
        actual = readFileSync(join(dir, file), 'utf8');
      } catch {
        actual = undefined;
      }
      if (actual !== yaml) drifted.push(join(dir, file));
    }
    for (const name of present) if (!expected.some(({ file }) => file === name)) drifted.push(join(dir, name));
  }
  return drifted;
}

function main(): number {
  if (process.argv.includes('--check')) {
    const drifted = driftedCrdFiles();
    for (const file of drifted) process.stderr.write(`drifted: ${file}\n`);
    if (drifted.length > 0) process.stderr.write('CRDs differ from the zod schemas: run `npm run crds`.\n');
    return drifted.length === 0 ? 0 : 1;
  }
  for (const dir of CRD_DIRS) {
    mkdirSync(dir, { recursive: true });
    for (const { file, yaml } of renderCrdFiles()) writeFileSync(join(dir, file), yaml);
    process.stdout.write(`wrote ${dir}\n`);
  }
  return 0;
}

if (process.argv[1] !== undefined && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  process.exitCode = main();
}
