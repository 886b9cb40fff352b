// Fault injection: ≥ 10,000 requests at a fixed rate through configs with retry, fallback
// and breakers, against a chaos upstream with a healthy fallback behind it. Pass: no hang,
// no crash, no gateway 5xx where a healthy target existed, every error OpenAI-shaped,
// memory back to baseline, no leaked sockets or timers.
import assert from 'node:assert/strict';
import { after, before, describe, test } from 'node:test';
import { Agent, request } from 'undici';
import { startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { FAULTS, startChaosUpstream, type ChaosUpstream } from './chaos-upstream.ts';

const TOTAL = Number(process.env['CHAOS_REQUESTS'] ?? 10_000);
const RATE = Number(process.env['CHAOS_RATE'] ?? 200); // requests per second
const BUDGET_MS = 5_000; // every request must end within this

let chaos: ChaosUpstream;
let healthy: MockOpenAI;
let harness: Harness;

function resources(): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const kind of process.getActiveResourcesInfo()) counts[kind] = (counts[kind] ?? 0) + 1;
  return counts;
}

function heapMiB(): number {
  (globalThis as { gc?: () => void }).gc?.();
  return process.memoryUsage().heapUsed / 1024 / 1024;
}

before(async () => {
  chaos = await startChaosUpstream(42);
  healthy = await startMockOpenAI();
});
after(async () => {
  await chaos.close();
  await healthy.close();
});

describe('fault injection', () => {
  test(`${TOTAL} requests at ${RATE}/s through retry + fallback + breakers`, async () => {
    const baselineResources = resources();
    const baselineHeap = heapMiB();
    harness = await startHarness({
      state: baseState({
        providers: [
          { slug: 'chaos', provider: 'openai', apiKey: 'sk-c', customHost: chaos.url },
          { slug: 'healthy', provider: 'openai', apiKey: 'sk-h', customHost: healthy.url },
        ],
        configs: [
          {
            id: 'retry-fallback',
            config: { strategy: { mode: 'fallback' }, targets: [{ provider: '@chaos', request_timeout: 300, retry: { attempts: 1, use_retry_after_headers: true } }, { provider: '@healthy' }] },
          },
          {
            id: 'breaker',
            config: {
              strategy: { mode: 'fallback' },
              targets: [{ name: 'flaky', provider: '@chaos', request_timeout: 300, cb_config: { failure_threshold: 25, cooldown_interval: 30_000 } }, { provider: '@healthy' }],
            },
          },
          {
            id: 'loadbalance',
            config: {
              strategy: { mode: 'loadbalance' },
              targets: [
                { strategy: { mode: 'fallback' }, targets: [{ provider: '@chaos', request_timeout: 300 }, { provider: '@healthy' }] },
                { provider: '@healthy' },
              ],
            },
          },
        ],
      }),
      retryBaseDelayMs: 5,
    });
    const client = new Agent({ connections: 256, keepAliveTimeout: 1_000 });
    const outcomes = { ok: 0, streamErrorEvent: 0, gateway5xx: [] as string[], notShaped: [] as string[], hung: 0, clientErrors: 0 };
    const configs = ['retry-fallback', 'breaker', 'loadbalance'];

    const one = async (index: number): Promise<void> => {
      const stream = index % 5 === 0;
      const signal = AbortSignal.timeout(BUDGET_MS);
      try {
        const response = await request(`${harness.gateway.url}/chat/completions`, {
          method: 'POST',
          dispatcher: client,
          signal,
          headers: { 'content-type': 'application/json', 'x-gateway-api-key': TEST_GATEWAY_KEY, 'x-gateway-config': configs[index % 3] as string },
          body: JSON.stringify({ model: 'm', messages: [{ role: 'user', content: `request ${index}` }], stream }),
        });
        const text = await response.body.text();
        if (response.statusCode >= 500) outcomes.gateway5xx.push(`${response.statusCode} ${text.slice(0, 160)}`);
        if (response.statusCode >= 400) {
          const shaped = (() => {
            try {
              const parsed = JSON.parse(text) as { error?: { message?: unknown; type?: unknown } };
              return typeof parsed.error?.message === 'string' && typeof parsed.error.type === 'string';
            } catch {
              return false;
            }
          })();
          if (!shaped) outcomes.notShaped.push(text.slice(0, 160));
        } else if (stream && text.includes('"timeout_error"')) {
          outcomes.streamErrorEvent++;
        } else {
          outcomes.ok++;
        }
      } catch (error) {
        if (signal.aborted) outcomes.hung++;
        else outcomes.clientErrors++;
      }
    };

    const started = Date.now();
    const pending: Promise<void>[] = [];
    for (let index = 0; index < TOTAL; index++) {
      // Open loop: requests go out on schedule, whether or not earlier ones have finished.
      const due = started + (index * 1000) / RATE;
      const wait = due - Date.now();
      if (wait > 1) await new Promise((resolve) => setTimeout(resolve, wait));
      pending.push(one(index));
    }
    await Promise.all(pending);
    const seconds = (Date.now() - started) / 1000;
    await client.close();
    const internal = harness.logs.filter((line) => line['msg'] === 'internal error').slice(0, 3);
    if (internal.length > 0) console.log(JSON.stringify({ internal }));
    await harness.close();
    // The harness keeps every log line in memory for tests; that is the test's, not the gateway's.
    harness.logs.length = 0;

    const heapAfter = heapMiB();
    const resourcesAfter = resources();
    const faults = Object.fromEntries(FAULTS.map((fault) => [fault, chaos.counts[fault]]));
    console.log(
      JSON.stringify({ requests: TOTAL, seconds, faults, outcomes: { ...outcomes, gateway5xx: outcomes.gateway5xx.slice(0, 5), notShaped: outcomes.notShaped.slice(0, 5) }, heapMiB: { before: baselineHeap, after: heapAfter }, resources: { before: baselineResources, after: resourcesAfter } }),
    );

    assert.equal(outcomes.hung, 0, 'every request ended within its budget');
    assert.equal(outcomes.clientErrors, 0, 'no connection was dropped by the gateway');
    assert.deepEqual(outcomes.gateway5xx.slice(0, 5), [], 'no gateway 5xx while a healthy fallback existed');
    assert.deepEqual(outcomes.notShaped.slice(0, 5), [], 'every error is OpenAI-shaped');
    assert.ok(outcomes.ok + outcomes.streamErrorEvent === TOTAL);
    assert.ok(heapAfter - baselineHeap < 30, `heap back near baseline: ${baselineHeap.toFixed(1)} → ${heapAfter.toFixed(1)} MiB`);
    for (const kind of ['TCPSocketWrap', 'TCPServerWrap', 'Timeout']) {
      assert.ok((resourcesAfter[kind] ?? 0) <= (baselineResources[kind] ?? 0) + 2, `${kind}: ${baselineResources[kind] ?? 0} → ${resourcesAfter[kind] ?? 0}`);
    }
  });
});
