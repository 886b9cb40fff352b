// One table-driven harness for every provider family's golden fixtures (STYLE.md:
// "golden request / response / stream fixtures per provider, run through the same
// assertions"). A fixture is one JSON file; each aspect present in it becomes a test:
//
//   {
//     "description": "what this case shows",
//     "endpoint": "chat.completions",                 // default
//     "target": { "headers": {…}, "config": {…}, "providers": [ saved provider entries ], "egress": { "allow": […] } },
//     "request": { …OpenAI request body… },
//     "upstreamRequest": { "url", "method", "headers": {subset}, "absentHeaders": [], "body": {…} | "<client bytes>" },
//     "requestError": { "status", "code", "param", "message": "substring" },
//     "upstreamResponse": {…}, "response": {…},
//     "upstreamStream": "raw bytes as text" | ["chunk", "chunk"], (or "upstreamStreamBase64": "…")
//     "stream": [ {chunk data}, …, "[DONE]" ],
//     "upstreamError": { "status", "body" }, "error": {…}
//   }
//
// The target is resolved the way the gateway does it (selectRoute + resolveTarget on a
// state built from `providers` and `egress`, which must list a saved provider's private
// host as a real state file must; `config` is sent as x-gateway-config). Expected values
// may use the matchers "<any>", "<number>" and "<string>"; objects must have exactly the
// expected keys. Streams are fed as given, whole, in 7-byte pieces and byte by byte, and
// every split must produce the expected chunks.
import assert from 'node:assert/strict';
import { readdirSync, readFileSync } from 'node:fs';
import { describe, test } from 'node:test';
import { buildGatewayState } from '../../../proxy/config/gateway-state.ts';
import { BUILTIN_GUARDRAIL_COMPILER } from '../../../proxy/guardrails/builtin-guardrail-compiler.ts';
import { GatewayStateSchema } from '../../../proxy/config/state-schema.ts';
import type { InferenceEndpoint } from '../../../proxy/openai/inference-endpoint.ts';
import { GatewayError } from '../../../proxy/errors.ts';
import type { ResolvedTarget, UpstreamRequestPlan } from '../../../proxy/providers/provider-adapter.ts';
import { SseEventTranslator, type SseEvent, type SseFrameSource } from '../../../proxy/providers/sse-parser.ts';
import { resolveTarget } from '../../../proxy/routing/resolve-target.ts';
import { selectRoute } from '../../../proxy/routing/select-route.ts';

export interface GoldenTargetSpec {
  readonly headers?: Readonly<Record<string, string>>;
  readonly config?: Readonly<Record<string, unknown>>;
  readonly providers?: readonly unknown[];
  /** The state's `egress` (a saved provider's private host must be in egress.allow to load). */
  readonly egress?: Readonly<Record<string, unknown>>;
}

export interface GoldenFixture {
  /** File name, used in test titles. */
  readonly file: string;
  readonly description: string;
  readonly endpoint: InferenceEndpoint;
  readonly target: GoldenTargetSpec;
  readonly request: Record<string, unknown>;
  readonly upstreamRequest?: {
    readonly url?: string;
    readonly method?: string;
    readonly headers?: Readonly<Record<string, string>>;
    readonly absentHeaders?: readonly string[];
    readonly body?: unknown;
  };
  readonly requestError?: { readonly status: number; readonly code?: string; readonly param?: string | null; readonly message?: string };
  readonly upstreamResponse?: unknown;
  readonly response?: unknown;
  readonly upstreamStream?: string | readonly string[];
  readonly upstreamStreamBase64?: string;
  readonly stream?: readonly unknown[];
  readonly upstreamError?: { readonly status: number; readonly body: unknown };
  readonly error?: unknown;
}

export interface GoldenSuiteOptions {
  /** Suite title (default: the directory name). */
  readonly title?: string;
  /** Runs before each fixture's tests, e.g. to reset a token cache or a clock. */
  readonly beforeEach?: () => void | Promise<void>;
}

const FIXTURE_KEYS = new Set([
  'description', 'endpoint', 'target', 'request', 'upstreamRequest', 'requestError', 'upstreamResponse', 'response',
  'upstreamStream', 'upstreamStreamBase64', 'stream', 'upstreamError', 'error',
]);

/** Registers one node:test suite running every *.json fixture in `dir`. */
export function runGoldenSuite(dir: URL, options: GoldenSuiteOptions = {}): void {
  const fixtures = loadGoldenFixtures(dir);
  describe(options.title ?? dir.pathname.split('/').filter(Boolean).at(-1) ?? 'golden fixtures', () => {
    test('the directory holds fixtures', () => assert.ok(fixtures.length > 0, `no *.json fixtures in ${dir.pathname}`));
    for (const fixture of fixtures) {
      describe(`${fixture.file}: ${fixture.description}`, () => registerFixture(fixture, options));
    }
  });
}

function registerFixture(fixture: GoldenFixture, options: GoldenSuiteOptions): void {
  const prepare = async (): Promise<void> => {
    await options.beforeEach?.();
  };
  if (fixture.upstreamRequest !== undefined || fixture.requestError !== undefined) {
    test('request → upstream request', async () => {
      await prepare();
      if (fixture.requestError !== undefined) {
        await assertPlanError(fixture, fixture.requestError);
        return;
      }
      assertUpstreamRequest(await planFixture(fixture), fixture);
    });
  }
  if (fixture.response !== undefined) {
    test('upstream response → OpenAI response', async () => {
      await prepare();
      const target = resolveFixtureTarget(fixture);
      const transform = target.adapter.transformResponse;
      const actual = transform === undefined ? fixture.upstreamResponse : transform(fixture.endpoint, fixture.upstreamResponse, fixture.request);
      assertMatches(actual, fixture.response);
    });
  }
  if (fixture.stream !== undefined) {
    const expected = fixture.stream;
    test('upstream stream → OpenAI chunks, however the bytes are split', async () => {
      await prepare();
      const target = resolveFixtureTarget(fixture);
      const source = upstreamStreamBytes(fixture);
      const splits: Array<[string, Buffer[]]> = [
        ['as given', source.given],
        ['whole', [source.whole]],
        ['7-byte pieces', splitBytes(source.whole, 7)],
        ['byte by byte', splitBytes(source.whole, 1)],
      ];
      for (const [how, chunks] of splits) {
        const source = target.adapter.createStreamTranslator?.(fixture.endpoint, fixture.request);
        const output = runStreamTranslator(source, chunks);
        assertMatches(parseSseData(output), expected, `$(${how})`);
      }
    });
  }
  if (fixture.error !== undefined) {
    test('upstream error → OpenAI error', async () => {
      await prepare();
      const target = resolveFixtureTarget(fixture);
      const upstream = fixture.upstreamError;
      assert.ok(upstream !== undefined, '"error" needs "upstreamError"');
      const text = typeof upstream.body === 'string' ? upstream.body : JSON.stringify(upstream.body);
      assertMatches(target.adapter.normaliseError(upstream.status, text, target.provider), fixture.error);
    });
  }
}

/** Reads and checks every *.json fixture in `dir`, sorted by file name. */
export function loadGoldenFixtures(dir: URL): GoldenFixture[] {
  const files = readdirSync(dir).filter((name) => name.endsWith('.json')).sort();
  return files.map((file) => {
    const raw: unknown = JSON.parse(readFileSync(new URL(file, dir), 'utf8'));
    assert.ok(isRecord(raw), `${file}: must be a JSON object`);
    for (const key of Object.keys(raw)) assert.ok(FIXTURE_KEYS.has(key), `${file}: unknown fixture key "${key}"`);
    assert.equal(typeof raw['description'], 'string', `${file}: description is required`);
    assert.ok(isRecord(raw['target']), `${file}: target is required`);
    assert.ok(isRecord(raw['request']), `${file}: request is required`);
    return { endpoint: 'chat.completions', ...raw, file } as unknown as GoldenFixture;
  });
}

/** Resolves the fixture's target as the gateway would for a request with its headers. */
export function resolveFixtureTarget(fixture: GoldenFixture): ResolvedTarget {
  const document = GatewayStateSchema.parse({ providers: fixture.target.providers ?? [], egress: fixture.target.egress });
  const built = buildGatewayState(document, undefined, 'golden', BUILTIN_GUARDRAIL_COMPILER);
  if (built.state === undefined) throw new Error(`${fixture.file}: invalid providers: ${built.errors.join('; ')}`);
  const headers: Record<string, string> = { ...fixture.target.headers };
  if (fixture.target.config !== undefined) headers['x-gateway-config'] = JSON.stringify(fixture.target.config);
  // Fixtures name a single target, so the plan's root is the leaf.
  const { plan } = selectRoute(headers, built.state);
  return resolveTarget(plan.settings, plan.path, built.state, headers);
}

/** Resolves the target and plans the upstream call for the fixture's request. */
export async function planFixture(fixture: GoldenFixture): Promise<UpstreamRequestPlan> {
  const target = resolveFixtureTarget(fixture);
  if (!target.adapter.supportsEndpoint(fixture.endpoint)) {
    throw new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', `Provider "${target.provider}" has no ${fixture.endpoint} endpoint.`);
  }
  return target.adapter.planRequest({ target, endpoint: fixture.endpoint, body: fixture.request, bodyChanged: false });
}

function assertUpstreamRequest(plan: UpstreamRequestPlan, fixture: GoldenFixture): void {
  const expected = fixture.upstreamRequest ?? {};
  if (expected.url !== undefined) assert.equal(plan.url, expected.url, 'upstream url');
  assert.equal(plan.method, expected.method ?? 'POST', 'upstream method');
  for (const [name, value] of Object.entries(expected.headers ?? {})) {
    assertMatches(plan.headers[name.toLowerCase()], value, `headers.${name}`);
  }
  for (const name of expected.absentHeaders ?? []) {
    assert.equal(plan.headers[name.toLowerCase()], undefined, `header ${name} must not be sent`);
  }
  if (expected.body === '<client bytes>') {
    assert.equal(plan.body, undefined, 'the client body is forwarded untouched');
  } else if (expected.body !== undefined) {
    assert.ok(plan.body !== undefined, 'the plan carries a body');
    assertMatches(JSON.parse(plan.body.toString()), expected.body, 'body');
  }
}

async function assertPlanError(fixture: GoldenFixture, expected: NonNullable<GoldenFixture['requestError']>): Promise<void> {
  const error = await planFixture(fixture).then(
    () => undefined,
    (caught: unknown) => caught,
  );
  assert.ok(error instanceof GatewayError, `expected a GatewayError, got ${String(error)}`);
  assert.equal(error.status, expected.status, `status (${error.message})`);
  if (expected.code !== undefined) assert.equal(error.code, expected.code);
  if (expected.param !== undefined) assert.equal(error.param, expected.param);
  if (expected.message !== undefined) assert.ok(error.message.includes(expected.message), `"${error.message}" should include "${expected.message}"`);
}

function upstreamStreamBytes(fixture: GoldenFixture): { given: Buffer[]; whole: Buffer } {
  let given: Buffer[];
  if (fixture.upstreamStreamBase64 !== undefined) given = [Buffer.from(fixture.upstreamStreamBase64, 'base64')];
  else if (typeof fixture.upstreamStream === 'string') given = [Buffer.from(fixture.upstreamStream)];
  else if (fixture.upstreamStream !== undefined) given = fixture.upstreamStream.map((piece) => Buffer.from(piece));
  else throw new Error(`${fixture.file}: "stream" needs "upstreamStream" or "upstreamStreamBase64"`);
  return { given, whole: Buffer.concat(given) };
}

/** Pushes `chunks` through a stream translator (identity when undefined) and returns the client's text. */
export function runStreamTranslator(source: SseFrameSource | undefined, chunks: readonly Buffer[]): string {
  if (source === undefined) return Buffer.concat(chunks).toString('utf8');
  let out = '';
  for (const chunk of chunks) for (const frame of source.push(chunk)) out += frame.raw;
  for (const frame of source.end()) out += frame.raw;
  return out;
}

/** The events of an SSE text as the translators read them (a translator that passes each event on). */
export function eventReader(options: { maxEventBytes?: number } = {}): { push(chunk: string | Buffer): SseEvent[]; end(): SseEvent[] } {
  const translator = new SseEventTranslator({ event: (frame, out) => out.push(frame) }, options);
  const events = (frames: SseEvent[]): SseEvent[] => frames.map(({ event, data, id }) => ({ event, data, id }));
  return { push: (chunk) => events(translator.push(chunk)), end: () => events(translator.end()) };
}

/** The `data:` payloads of an SSE text: JSON parsed, `[DONE]` kept as a string. */
export function parseSseData(text: string): unknown[] {
  const parser = eventReader();
  return [...parser.push(text), ...parser.end()].map((event) => (event.data === '[DONE]' ? '[DONE]' : (JSON.parse(event.data) as unknown)));
}

export function splitBytes(buffer: Buffer, size: number): Buffer[] {
  const pieces: Buffer[] = [];
  for (let offset = 0; offset < buffer.length; offset += size) pieces.push(buffer.subarray(offset, offset + size));
  return pieces;
}

/** Deep equality where expected "<any>", "<number>", "<string>" match any such value. */
export function assertMatches(actual: unknown, expected: unknown, path = '$'): void {
  if (expected === '<any>') {
    assert.notEqual(actual, undefined, `${path}: expected a value`);
    return;
  }
  if (expected === '<number>' || expected === '<string>') {
    assert.equal(typeof actual, expected.slice(1, -1), `${path}: expected a ${expected.slice(1, -1)}, got ${JSON.stringify(actual)}`);
    return;
  }
  if (Array.isArray(expected)) {
    assert.ok(Array.isArray(actual), `${path}: expected an array, got ${JSON.stringify(actual)}`);
    assert.equal(actual.length, expected.length, `${path}: expected ${expected.length} items, got ${JSON.stringify(actual)}`);
    expected.forEach((item: unknown, index) => assertMatches(actual[index], item, `${path}[${index}]`));
    return;
  }
  if (isRecord(expected)) {
    assert.ok(isRecord(actual), `${path}: expected an object, got ${JSON.stringify(actual)}`);
    assert.deepEqual(Object.keys(actual).sort(), Object.keys(expected).sort(), `${path}: keys differ in ${JSON.stringify(actual)}`);
    for (const [key, value] of Object.entries(expected)) assertMatches(actual[key], value, `${path}.${key}`);
    return;
  }
  assert.deepEqual(actual, expected, `${path}: expected ${JSON.stringify(expected)}, got ${JSON.stringify(actual)}`);
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
