// /v1/messages to OpenAI-format providers, table-driven from
// test/fixtures/providers/messages-openai/*.json (the golden-runner's fixture format with
// Anthropic-shaped requests and answers). Requests are planned by the catalog's adapter with
// the request's Messages ingress on the body (as the walk plans them), answers, streams and
// errors translated by the adapter that ingress gives the relay.
// Streams are fed whole, in 7-byte pieces and byte by byte; every frame's event name must
// equal its payload's type, as in Anthropic's streams.
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { MessagesIngress } from '../../../proxy/ingress/anthropic-messages/messages-ingress.ts';
import type { UpstreamRequestPlan } from '../../../proxy/providers/provider-adapter.ts';
import { GatewayError } from '../../../proxy/errors.ts';
import {
  assertMatches,
  loadGoldenFixtures,
  resolveFixtureTarget,
  eventReader,
  runStreamTranslator,
  splitBytes,
  type GoldenFixture,
} from '../providers/golden-runner.ts';

const fixtures = loadGoldenFixtures(new URL('../../fixtures/providers/messages-openai/', import.meta.url));

function relayAdapter(fixture: GoldenFixture) {
  return new MessagesIngress(fixture.endpoint).answerAdapter(resolveFixtureTarget(fixture), fixture.request);
}

/** Plans the fixture's request as the walk does: the catalog's adapter, the ingress riding on the body. */
async function planFixture(fixture: GoldenFixture): Promise<UpstreamRequestPlan> {
  const target = resolveFixtureTarget(fixture);
  if (!target.adapter.supportsEndpoint(fixture.endpoint)) {
    throw new GatewayError('AIGW_ERR_UNSUPPORTED_ENDPOINT', `Provider "${target.provider}" has no ${fixture.endpoint} endpoint.`);
  }
  const body = new MessagesIngress(fixture.endpoint).forwardedBody(fixture.request, fixture.target.headers ?? {});
  return target.adapter.planRequest({ target, endpoint: fixture.endpoint, body, bodyChanged: false });
}

/** Each SSE event as { event, payload }. */
function events(text: string): Array<{ event: string | undefined; payload: unknown }> {
  const parser = eventReader();
  return [...parser.push(text), ...parser.end()].map((event) => ({ event: event.event, payload: JSON.parse(event.data) as unknown }));
}

describe('messages → OpenAI-format golden fixtures', () => {
  test('the directory holds fixtures', () => assert.ok(fixtures.length >= 8));
  for (const fixture of fixtures) {
    describe(`${fixture.file}: ${fixture.description}`, () => {
      if (fixture.upstreamRequest !== undefined) {
        test('request → upstream chat request', async () => {
          const plan = await planFixture(fixture);
          const expected = fixture.upstreamRequest ?? {};
          if (expected.url !== undefined) assert.equal(plan.url, expected.url);
          for (const [name, value] of Object.entries(expected.headers ?? {})) assertMatches(plan.headers[name], value, `headers.${name}`);
          for (const name of expected.absentHeaders ?? []) assert.equal(plan.headers[name], undefined, `${name} must not be sent`);
          assert.ok(plan.body !== undefined, 'a translated body is sent');
          assertMatches(JSON.parse(plan.body.toString()), expected.body, 'body');
        });
      }
      if (fixture.requestError !== undefined) {
        const expected = fixture.requestError;
        test('request → 400 before any call', async () => {
          const error = await Promise.resolve()
            .then(() => planFixture(fixture))
            .then(
              () => undefined,
              (caught: unknown) => caught,
            );
          assert.ok(error instanceof GatewayError, `expected a GatewayError, got ${String(error)}`);
          assert.equal(error.status, expected.status);
          if (expected.code !== undefined) assert.equal(error.code, expected.code);
          if (expected.param !== undefined) assert.equal(error.param, expected.param);
          if (expected.message !== undefined) assert.ok(error.message.includes(expected.message), error.message);
        });
      }
      if (fixture.response !== undefined) {
        test('chat answer → Message', () => {
          const adapter = relayAdapter(fixture);
          assertMatches(adapter.transformResponse?.(fixture.endpoint, fixture.upstreamResponse, fixture.request), fixture.response);
        });
      }
      if (fixture.stream !== undefined) {
        const expected = fixture.stream;
        test('chat stream → Anthropic events, however the bytes are split', async () => {
          const pieces = (Array.isArray(fixture.upstreamStream) ? fixture.upstreamStream : [fixture.upstreamStream ?? '']).map((piece) => Buffer.from(piece));
          const whole = Buffer.concat(pieces);
          for (const [how, chunks] of [
            ['as given', pieces],
            ['whole', [whole]],
            ['7-byte pieces', splitBytes(whole, 7)],
            ['byte by byte', splitBytes(whole, 1)],
          ] as const) {
            const output = runStreamTranslator(relayAdapter(fixture).createStreamTranslator?.(fixture.endpoint, fixture.request), chunks);
            const parsed = events(output);
            for (const { event, payload } of parsed) assert.equal(event, (payload as { type?: unknown }).type, `${how}: event name = payload type`);
            assertMatches(
              parsed.map(({ payload }) => payload),
              expected,
              `$(${how})`,
            );
          }
        });
      }
      if (fixture.error !== undefined) {
        test('provider error → Anthropic error', () => {
          const upstream = fixture.upstreamError;
          assert.ok(upstream !== undefined);
          const text = typeof upstream.body === 'string' ? upstream.body : JSON.stringify(upstream.body);
          assertMatches(relayAdapter(fixture).normaliseError(upstream.status, text, 'openai'), fixture.error);
        });
      }
    });
  }
});
