// The price table: the built-in prices (@pydantic/genai-prices) as the gateway applies them,
// the fast path for flat prices agreeing with the package's own calculation, cached input,
// state-file overrides, and unknown models priced as unknown (never zero).
import assert from 'node:assert/strict';
import { describe, test } from 'node:test';
import { calcPrice } from '@pydantic/genai-prices';
import fc from 'fast-check';
import { PriceTable } from '../../../proxy/accounting/price-table.ts';

const close = (actual: number | undefined, expected: number, what: string): void => {
  assert.ok(actual !== undefined, `${what}: priced`);
  assert.ok(Math.abs(actual - expected) <= 1e-12 + Math.abs(expected) * 1e-9, `${what}: ${actual} ≈ ${expected}`);
};

describe('price table', () => {
  test('gpt-4o-mini at OpenAI: input, cached input and output at their own rates', () => {
    const table = new PriceTable();
    const cost = table.costUsd('openai', 'gpt-4o-mini', { prompt: 1_000_000, completion: 1_000_000, cachedPrompt: 400_000 });
    const price = calcPrice({ input_tokens: 1_000_000, output_tokens: 1_000_000, cache_read_tokens: 400_000 }, 'gpt-4o-mini', { providerId: 'openai' });
    assert.ok(price !== null);
    close(cost, price.total_price, 'gpt-4o-mini');
    // Cached input is cheaper than uncached: the same prompt without a cache costs more.
    const uncached = table.costUsd('openai', 'gpt-4o-mini', { prompt: 1_000_000, completion: 1_000_000 });
    assert.ok(uncached !== undefined && cost !== undefined && uncached > cost);
  });

  test('the fast path agrees with the package for a spread of providers and models', () => {
    const table = new PriceTable();
    const cases: Array<[string, string, string]> = [
      ['openai', 'openai', 'gpt-4o-2024-08-06'],
      ['openai', 'openai', 'o3-mini'],
      ['anthropic', 'anthropic', 'claude-3-5-sonnet-20241022'],
      ['azure-openai', 'azure', 'gpt-4o-mini'],
      ['groq', 'groq', 'llama-3.1-8b-instant'],
      ['mistral-ai', 'mistral', 'mistral-large-latest'],
      ['vertex-ai', 'google', 'gemini-1.5-pro'],
      ['bedrock', 'aws', 'anthropic.claude-3-haiku-20240307-v1:0'],
    ];
    const at = new Date('2026-01-15T12:00:00Z');
    for (const [provider, tableProvider, model] of cases) {
      for (const usage of [{ prompt: 1234, completion: 567, cachedPrompt: 200 }, { prompt: 300_000, completion: 10 }]) {
        const expected = calcPrice(
          { input_tokens: usage.prompt, output_tokens: usage.completion, cache_read_tokens: usage.cachedPrompt ?? 0, cache_write_tokens: 0 },
          model,
          { providerId: tableProvider, timestamp: at },
        );
        assert.ok(expected !== null, `${provider}/${model} is in the table`);
        close(table.costUsd(provider, model, usage, at.getTime()), expected.total_price, `${provider}/${model} ${usage.prompt}`);
      }
    }
  });

  test('reasoning tokens are part of the output and billed at the output rate', () => {
    const table = new PriceTable();
    const plain = table.costUsd('openai', 'o3-mini', { prompt: 100, completion: 1000 });
    const withReasoning = table.costUsd('openai', 'o3-mini', { prompt: 100, completion: 1000, reasoning: 800 });
    assert.equal(withReasoning, plain);
  });

  test('unknown models, self-hosted and made-up providers are unpriced, not free', () => {
    const table = new PriceTable();
    assert.equal(table.costUsd('openai', 'my-private-finetune-xyz', { prompt: 10, completion: 10 }), undefined);
    assert.equal(table.costUsd('ollama', 'llama3', { prompt: 10, completion: 10 }), undefined);
    assert.equal(table.costUsd('custom', 'gpt-4o-mini', { prompt: 10, completion: 10 }), undefined);
    assert.equal(table.costUsd('openai', 'gpt-4o-mini', { prompt: undefined, completion: undefined }), undefined);
    assert.equal(table.knows('openai', 'gpt-4o-mini'), true);
  });

  test('state-file overrides price private models, per provider or for any provider', () => {
    const table = new PriceTable([
      { model: 'acme-7b', inputPerMillion: 1, outputPerMillion: 2, cachedInputPerMillion: 0.5 },
      { model: 'gpt-4o-mini', provider: 'vllm', inputPerMillion: 0, outputPerMillion: 0 },
    ]);
    close(table.costUsd('vllm', 'acme-7b', { prompt: 1_000_000, completion: 500_000, cachedPrompt: 500_000 }), 0.5 + 0.25 + 1, 'acme-7b');
    assert.equal(table.costUsd('vllm', 'gpt-4o-mini', { prompt: 1000, completion: 1000 }), 0);
    // The override is for vllm only: OpenAI's own gpt-4o-mini keeps its table price.
    assert.ok((table.costUsd('openai', 'gpt-4o-mini', { prompt: 1000, completion: 1000 }) ?? 0) > 0);
  });

  test('inconsistent counts from a provider (cached above prompt, negatives) never throw', () => {
    const table = new PriceTable();
    const cost = table.costUsd('openai', 'gpt-4o-mini', { prompt: 10, completion: -5, cachedPrompt: 50 });
    assert.ok(cost !== undefined && cost >= 0);
    assert.doesNotThrow(() => table.costUsd('vertex-ai', 'gemini-1.5-pro', { prompt: 10, completion: 5, cachedPrompt: 50, cacheWrite: 99 }));
  });

  test("audio tokens at the model's audio rates (realtime models), agreeing with the package; text rates when a model has none", () => {
    const table = new PriceTable();
    const usage = { prompt: 1000, completion: 500, cachedPrompt: 400, audioPrompt: 600, cachedAudioPrompt: 300, audioCompletion: 450 };
    const counts = { input_tokens: 1000, output_tokens: 500, cache_read_tokens: 400, input_audio_tokens: 600, cache_audio_read_tokens: 300, output_audio_tokens: 450 };
    for (const [provider, tableProvider, model] of [
      ['openai', 'openai', 'gpt-realtime'],
      ['openai', 'openai', 'gpt-4o-realtime-preview'],
      ['azure-openai', 'azure', 'gpt-4o-mini-realtime-preview'],
      ['vertex-ai', 'google', 'gemini-2.5-flash'],
      ['openai', 'openai', 'gpt-4o-audio-preview'],
    ] as const) {
      const expected = calcPrice(counts, model, { providerId: tableProvider });
      assert.ok(expected !== null, `${model} is in the table`);
      close(table.costUsd(provider, model, usage), expected.total_price, `${provider}/${model}`);
    }
    const text = table.costUsd('openai', 'gpt-realtime', { prompt: 1000, completion: 500, cachedPrompt: 400 }) ?? 0;
    assert.ok((table.costUsd('openai', 'gpt-realtime', usage) ?? 0) > 3 * text, 'audio costs more than text');
    // Overrides: audio prices when given; otherwise the text prices; cached audio defaults to the cached price.
    const priced = new PriceTable([
      { model: 'voice', inputPerMillion: 1, outputPerMillion: 2, cachedInputPerMillion: 0.5, audioInputPerMillion: 10, cachedAudioInputPerMillion: 5, audioOutputPerMillion: 20 },
      { model: 'plain', inputPerMillion: 1, outputPerMillion: 2, cachedInputPerMillion: 0.5 },
    ]);
    const m = 1_000_000;
    const audio = { prompt: 4 * m, completion: 2 * m, cachedPrompt: 2 * m, audioPrompt: 2 * m, cachedAudioPrompt: m, audioCompletion: m };
    close(priced.costUsd(undefined, 'voice', audio), 1 + 0.5 + 10 + 5 + 2 + 20, 'voice');
    close(priced.costUsd(undefined, 'plain', audio), 2 * 1 + 2 * 0.5 + 2 * 2, 'plain: audio billed as text');
    // Hostile audio counts never exceed their parents.
    const hostile = priced.costUsd(undefined, 'voice', { prompt: 10, completion: 10, audioPrompt: 1e9, cachedAudioPrompt: 1e9, audioCompletion: 1e9 });
    close(hostile, (10 * 10 + 10 * 20) / m, 'audio clipped to the prompt and completion');
  });

  // The flat path computes usage's parts in place; the amount must be exactly the one the parts,
  // clipped to their parents, gave before (the same operations in the same order), for any counts.
  test('flat prices: exactly the sum of the clipped parts at their rates, for any counts', () => {
    const pos = (value: number | undefined): number => (value === undefined || !Number.isFinite(value) || value < 0 ? 0 : value);
    const reference = (p: Record<string, number>, u: Record<string, number | undefined>): number => {
      const prompt = pos(u['prompt']);
      const cacheRead = Math.min(pos(u['cachedPrompt']), prompt);
      const cacheWrite = Math.min(pos(u['cacheWrite']), prompt - cacheRead);
      const audioCacheRead = Math.min(pos(u['cachedAudioPrompt']), pos(u['audioPrompt']), cacheRead);
      const audioInput = Math.min(pos(u['audioPrompt']) - audioCacheRead, prompt - cacheRead - cacheWrite);
      const completion = pos(u['completion']);
      const audioOutput = Math.min(pos(u['audioCompletion']), completion);
      const parts = { textInput: prompt - cacheRead - cacheWrite - audioInput, textCacheRead: cacheRead - audioCacheRead, cacheWrite, audioInput, audioCacheRead, textOutput: completion - audioOutput, audioOutput };
      const input = parts.textInput * p['i']! + parts.textCacheRead * p['c']! + parts.cacheWrite * p['w']! + parts.audioInput * p['ai']! + parts.audioCacheRead * p['ac']!;
      return (input + parts.textOutput * p['o']! + parts.audioOutput * p['ao']!) / 1e6;
    };
    const count = fc.option(fc.oneof(fc.nat(2_000_000), fc.double({ min: -10, max: 1e10 }), fc.constantFrom(Number.NaN, Infinity)), { nil: undefined });
    const rate = fc.double({ min: 0, max: 100, noNaN: true });
    fc.assert(fc.property(fc.record({ i: rate, o: rate, c: rate, w: rate, ai: rate, ac: rate, ao: rate }), fc.record({ prompt: count, completion: count, cachedPrompt: count, cacheWrite: count, audioPrompt: count, cachedAudioPrompt: count, audioCompletion: count }), (p, usage) => {
      fc.pre(usage.prompt !== undefined || usage.completion !== undefined);
      const table = new PriceTable([{ model: 'm', inputPerMillion: p.i, outputPerMillion: p.o, cachedInputPerMillion: p.c, cacheWritePerMillion: p.w, audioInputPerMillion: p.ai, cachedAudioInputPerMillion: p.ac, audioOutputPerMillion: p.ao }]);
      assert.equal(table.costUsd(undefined, 'm', usage), reference(p, usage));
    }), { numRuns: 2000 });
  });
});
