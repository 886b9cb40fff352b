// The docs stay true to the code: every state-file example in docs/ and the README passes
// `aigateway validate`, every command the README and docs tell you to run exists, every
// metric family the proxy registers is listed in docs/configuration.md, and no page points
// at a file outside the repository.
import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import { existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { dirname, join, normalize, relative, sep } from 'node:path';
import { after, describe, test } from 'node:test';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { dump, load } from 'js-yaml';
import { GatewayStateSchema } from '../../proxy/config/state-schema.ts';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const CLI = join(ROOT, 'bin', 'aigateway.js');
const run = promisify(execFile);
const scratch = mkdtempSync(join(tmpdir(), 'aigw-docs-'));
after(() => rmSync(scratch, { recursive: true, force: true }));

const PAGES = [...readdirSync(join(ROOT, 'docs')).filter((name) => name.endsWith('.md')).map((name) => join('docs', name)), 'README.md', join('sdk', 'js', 'README.md')];
const read = (page: string) => readFileSync(join(ROOT, page), 'utf8');
const lineOf = (text: string, index: number) => text.slice(0, index).split('\n').length;

interface Block {
  readonly where: string;
  readonly text: string;
  readonly doc: Record<string, unknown>;
}

const STATE_KEYS = new Set(Object.keys(GatewayStateSchema.shape));

/** YAML code blocks that are state documents (every top-level key a state section; not a credentials file). */
function stateBlocks(): Block[] {
  const blocks: Block[] = [];
  for (const page of PAGES) {
    const text = read(page);
    for (const match of text.matchAll(/```ya?ml\n([\s\S]*?)```/g)) {
      const source = match[1] ?? '';
      let doc: unknown;
      try {
        doc = load(source);
      } catch {
        continue; // Kubernetes manifests with several documents, templates…: not state files
      }
      if (doc === null || typeof doc !== 'object' || Array.isArray(doc)) continue;
      const record = doc as Record<string, unknown>;
      const keys = Object.keys(record);
      if (keys.length === 0 || !keys.every((key) => STATE_KEYS.has(key))) continue;
      // The credentials file has the same section names, keyed by slug/id (maps, not lists).
      if (['providers', 'apiKeys'].some((key) => key in record && !Array.isArray(record[key]))) continue;
      blocks.push({ where: `${page}:${lineOf(text, match.index)}`, text: source, doc: record });
    }
  }
  return blocks;
}

/** The fragment's egress with the reference's `allow` entries added. */
function withBaseEgress(own: unknown, reference: unknown): Record<string, unknown> {
  const mine = (own ?? {}) as Record<string, unknown>;
  const theirs = ((reference ?? {}) as { allow?: unknown[] }).allow ?? [];
  return { ...mine, allow: [...new Set([...((mine['allow'] as unknown[] | undefined) ?? []), ...theirs])] };
}

describe('docs are true', () => {
  test('every state-file example in the docs passes `aigateway validate` (fragments on top of the reference examples)', { timeout: 120_000 }, async () => {
    const blocks = stateBlocks();
    assert.ok(blocks.length >= 8, `found only ${blocks.length} state examples: the extractor is broken`);
    // A fragment (e.g. a `configs:` snippet routing to "@openai-prod") is read on top of the
    // saved providers and configs of the reference examples (and the egress list they need): docs/configuration.md's full
    // example (the first with providers) and gateway.example.yaml.
    const reference = blocks.find((block) => block.where.startsWith(join('docs', 'configuration.md')) && Array.isArray(block.doc['providers']));
    assert.ok(reference, 'docs/configuration.md has a full example with providers');
    const shipped = load(read('gateway.example.yaml')) as Record<string, unknown>;
    // gateway.example.yaml's egress admits its loopback provider.
    const base: Record<string, unknown> = { egress: shipped['egress'] };
    for (const section of ['providers', 'configs']) {
      const entries = [...((reference.doc[section] as unknown[] | undefined) ?? []), ...((shipped[section] as unknown[] | undefined) ?? [])];
      const seen = new Set<string>();
      base[section] = entries.filter((entry) => {
        const id = String((entry as { slug?: string; id?: string }).slug ?? (entry as { id?: string }).id);
        return !seen.has(id) && seen.add(id) !== undefined;
      });
    }
    let index = 0;
    for (const block of blocks) {
      const file = join(scratch, `example-${index++}.yaml`);
      const missing = Object.keys(base).filter((section) => !(section in block.doc));
      let doc = block === reference || missing.length === 0 ? block.doc : { ...Object.fromEntries(missing.map((section) => [section, base[section]])), ...block.doc };
      // A fragment with its own egress but the reference's providers also needs the egress those providers need.
      if (missing.includes('providers') && !missing.includes('egress')) doc = { ...doc, egress: withBaseEgress(block.doc['egress'], base['egress']) };
      writeFileSync(file, doc === block.doc ? block.text : dump(doc));
      // `${NAME}` placeholders get a value (as the reader's environment would); `${NAME:-x}` keep their default.
      const env: NodeJS.ProcessEnv = { ...process.env };
      for (const [, name] of readFileSync(file, 'utf8').matchAll(/\$\{(\w+)\}/g)) env[name ?? ''] ??= `docs-example-${'k3y'.repeat(12)}`;
      const result = await run(process.execPath, [CLI, 'validate', file], { env }).catch((error: { stdout: string; code: number }) => error);
      assert.equal((result as { code?: number }).code ?? 0, 0, `${block.where}: ${(result as { stdout: string }).stdout}`);
    }
  });

  test('the commands the README and docs give exist: npm scripts, CLI commands, files run with node', () => {
    const manifest = JSON.parse(read('package.json')) as { scripts: Record<string, string>; bin: Record<string, string> };
    const sdkScripts = (JSON.parse(read(join('sdk', 'js', 'package.json'))) as { scripts: Record<string, string> }).scripts;
    const commands = new Set(['serve', 'validate', 'operator', 'help']);
    let checked = 0;
    for (const page of PAGES) {
      const text = read(page);
      for (const match of text.matchAll(/npm (?:run ([\w:-]+)|(start|test)\b)/g)) {
        const script = match[1] ?? match[2] ?? '';
        const line = text.split('\n')[lineOf(text, match.index) - 1] ?? '';
        // `npm run build` of the SDK is said of sdk/js.
        const scripts = /sdk\/js|sdk\.md/.test(line + page) && script in sdkScripts ? sdkScripts : manifest.scripts;
        assert.ok(script in scripts, `${page}:${lineOf(text, match.index)}: npm ${match[0].slice(4)} is not a script`);
        checked += 1;
      }
      for (const match of text.matchAll(/(?:npm run aigateway --|npx aigateway|node bin\/aigateway\.js) (\w+)/g)) {
        assert.ok(commands.has(match[1] ?? ''), `${page}:${lineOf(text, match.index)}: aigateway ${match[1]} is not a command`);
        checked += 1;
      }
      for (const match of text.matchAll(/\bnode ((?:bin|bench|operator|test)\/[\w./-]+\.(?:ts|js))/g)) {
        assert.ok(existsSync(join(ROOT, match[1] ?? '')), `${page}:${lineOf(text, match.index)}: ${match[1]} does not exist`);
        checked += 1;
      }
    }
    assert.ok('aigateway' in manifest.bin);
    assert.ok(checked >= 10, `only ${checked} commands found`);
  });

  test('every metric family the proxy registers is listed in docs/configuration.md, the operator\'s in docs/kubernetes.md', () => {
    const families = (dir: string): string[] => {
      const found = new Set<string>();
      const walk = (path: string) => {
        for (const entry of readdirSync(path, { withFileTypes: true })) {
          if (entry.isDirectory()) walk(join(path, entry.name));
          else if (entry.name.endsWith('.ts')) for (const [, name] of readFileSync(join(path, entry.name), 'utf8').matchAll(/name: '((?:aigateway|gen_ai)_\w+)'/g)) found.add(name ?? '');
        }
      };
      walk(join(ROOT, dir));
      return [...found];
    };
    const proxy = families('proxy');
    assert.ok(proxy.length >= 25, `only ${proxy.length} proxy metric families found`);
    const configuration = read(join('docs', 'configuration.md'));
    assert.deepEqual(proxy.filter((name) => !configuration.includes(`\`${name}`)), [], 'missing from docs/configuration.md');
    const kubernetes = read(join('docs', 'kubernetes.md'));
    assert.deepEqual(families('operator').filter((name) => !kubernetes.includes(`\`${name}`)), [], 'missing from docs/kubernetes.md');
  });

  test('no page refers to a file outside the repository, and every relative link resolves inside it', () => {
    for (const page of PAGES) {
      const text = read(page);
      for (const outside of ['DESIGN.md', 'gateway-spec', '../shared', '/work/']) {
        assert.ok(!text.includes(outside), `${page} mentions ${outside}`);
      }
      for (const match of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        const target = match[1] ?? '';
        if (/^(https?:|mailto:|#)/.test(target)) continue;
        const path = normalize(join(ROOT, dirname(page), target.split('#')[0] ?? ''));
        assert.ok(!relative(ROOT, path).startsWith(`..${sep}`), `${page}: link ${target} leaves the repository`);
        assert.ok(existsSync(path), `${page}: link ${target} does not exist`);
      }
    }
  });
});
