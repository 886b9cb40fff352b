import { describe, it } from 'node:test';
import assert from 'node:assert/strict';
import { compileGuardrails } from '../../../proxy/guardrails/compile-guardrails.ts';
import { findPii, passesIbanChecksum, passesLuhn, type PiiCategory } from '../../../proxy/guardrails/pii-detectors.ts';
import { runAfterHooks, runBeforeHooks } from '../../../proxy/guardrails/run-hooks.ts';
import { MAX_REGEX_TEXT_LENGTH } from '../../../proxy/guardrails/user-regex.ts';
import { describeCheckTable, runOneCheck } from './check-table.ts';

describeCheckTable('default.regexReplace', {
  pass: [
    [{ rule: 'secret' }, 'a secret (replaced, still passes)'],
    [{ rule: 'secret', failOnDetection: true }, 'nothing to replace'],
  ],
  fail: [[{ rule: 'secret', flags: 'i', failOnDetection: true }, 'a SECRET']],
  bad: [
    [{}, '.rule: Required'],
    [{ rule: '(x*)*y' }, '.rule: may backtrack catastrophically'],
    [{ rule: 'x', replacement: 1 }, '.replacement: must be a string'],
    [{ rule: 'x', redactText: '#' }, '.redactText: unknown key'],
  ],
});

describeCheckTable('default.pii', {
  pass: [
    [{}, 'Nothing personal here, version 1.2.3 released 2024-01-15.'],
    [{ categories: ['email'] }, 'call +1 (555) 123-4567'],
    [{ mode: 'redact' }, 'mail ann@example.com (redacted, so it passes)'],
  ],
  fail: [
    [{}, 'mail ann@example.com'],
    [{ categories: ['credit_card'] }, 'card 4111 1111 1111 1111'],
    [{ categories: ['api_key'] }, 'key sk-proj-Ab3dEf6hIj9kLm2nOp5qRs8t'],
  ],
  bad: [
    [{ categories: [] }, '.categories: must not be empty'],
    [{ categories: ['ssn'] }, '.categories[0]: must be one of email, phone, credit_card, iban, ip_address, api_key'],
    [{ mode: 'mask' }, '.mode: must be one of detect, redact'],
  ],
});

const ALL = new Set<PiiCategory>(['email', 'phone', 'credit_card', 'iban', 'ip_address', 'api_key']);

function categoriesIn(text: string): string[] {
  return findPii(text, ALL).map((span) => `${span.category}:${text.slice(span.start, span.end)}`);
}

describe('PII detectors', () => {
  const found: Array<[string, string[]]> = [
    ['write to ann.lee+tag@mail.example.co.uk today', ['email:ann.lee+tag@mail.example.co.uk']],
    ['call +1 (555) 123-4567 or +44 20 7946 0958', ['phone:+1 (555) 123-4567', 'phone:+44 20 7946 0958']],
    ['card 4111 1111 1111 1111, also 5500-0000-0000-0004', ['credit_card:4111 1111 1111 1111', 'credit_card:5500-0000-0000-0004']],
    ['IBAN DE89 3704 0044 0532 0130 00 OK', ['iban:DE89 3704 0044 0532 0130 00']],
    ['pay GB82WEST12345698765432.', ['iban:GB82WEST12345698765432']],
    ['from 192.168.1.20 and 2001:db8::1', ['ip_address:192.168.1.20', 'ip_address:2001:db8::1']],
    ['AKIAIOSFODNN7EXAMPLE', ['api_key:AKIAIOSFODNN7EXAMPLE']],
    [`token ghp_${'a1B2'.repeat(9)}`, [`api_key:ghp_${'a1B2'.repeat(9)}`]],
    ['api_key = "Zx9kQ2mP7vR4tY8wB3nL"', ['api_key:Zx9kQ2mP7vR4tY8wB3nL']],
  ];
  for (const [text, expected] of found) {
    it(`finds ${expected.join(', ')}`, () => assert.deepEqual(categoriesIn(text), expected));
  }

  const clean = [
    'released 2024-01-15 at 12:30:45',
    'version 1.2.3.4567 of pi 3.14159265358979',
    'card 4111 1111 1111 1112 fails Luhn',
    'IBAN DE89 3704 0044 0532 0130 01 fails mod-97',
    'use sk-learn-is-a-python-library-for-ml',
    'password = "aaaaaaaaaaaaaaaaaaaaaaaa"',
    'not an ip 999.1.1.1',
    'order 12345',
  ];
  for (const text of clean) {
    it(`finds nothing in ${JSON.stringify(text)}`, () => assert.deepEqual(categoriesIn(text), []));
  }

  it('checks Luhn and mod-97', () => {
    assert.equal(passesLuhn('79927398713'), true);
    assert.equal(passesLuhn('79927398710'), false);
    assert.equal(passesIbanChecksum('GB82WEST12345698765432'), true);
    assert.equal(passesIbanChecksum('GB82WEST12345698765433'), false);
  });

  // A backtracking pattern would not finish on these; the time itself is bench/'s business.
  it('finishes on long adversarial digit and dot runs, finding nothing in them', () => {
    const text = `${'1 '.repeat(20_000)}${'1.'.repeat(20_000)}${'a@'.repeat(20_000)}`;
    assert.deepEqual(findPii(text, ALL), []);
  });
});

describe('rewriting mutators', () => {
  it('redacts PII in every chat text before the upstream sees it, leaving the caller body alone', async () => {
    const compiled = compileGuardrails({ input_guardrails: [{ pii: { mode: 'redact', categories: ['email', 'credit_card'] } }] }, new Map());
    const requestBody = {
      model: 'm',
      messages: [
        { role: 'system', content: 'be nice' },
        { role: 'user', content: [{ type: 'text', text: 'I am ann@example.com' }, { type: 'image_url', image_url: { url: 'x' } }] },
        { role: 'user', content: 'card 4111 1111 1111 1111' },
      ],
    };
    const snapshot = structuredClone(requestBody);
    const outcome = await runBeforeHooks(compiled, { endpoint: 'chat.completions', requestBody });
    assert.deepEqual(requestBody, snapshot);
    assert.deepEqual(outcome.requestBody, {
      model: 'm',
      messages: [
        { role: 'system', content: 'be nice' },
        { role: 'user', content: [{ type: 'text', text: 'I am [REDACTED_EMAIL]' }, { type: 'image_url', image_url: { url: 'x' } }] },
        { role: 'user', content: 'card [REDACTED_CREDIT_CARD]' },
      ],
    });
    const check = outcome.results[0]?.checks[0];
    assert.deepEqual(check?.data, { mode: 'redact', found: { email: 1, credit_card: 1 }, redacted: true });
    assert.equal(check?.transformed, true);
    assert.equal(outcome.results[0]?.transformed, true);
    assert.ok(!JSON.stringify(outcome.results).includes('ann@example.com'), 'findings are never echoed');
  });

  it('rewrites the answer after the call with regexReplace', async () => {
    const compiled = compileGuardrails(
      { output_guardrails: [{ regexReplace: { rule: '\\b(\\d{3})-(\\d{4})\\b', replacement: '$1-XXXX' } }] },
      new Map(),
    );
    const responseBody = {
      object: 'chat.completion',
      choices: [
        { index: 0, message: { role: 'assistant', content: 'call 555-1234' }, finish_reason: 'stop' },
        { index: 1, message: { role: 'assistant', content: null, tool_calls: [] }, finish_reason: 'tool_calls' },
      ],
    };
    const outcome = await runAfterHooks(compiled, { endpoint: 'chat.completions', requestBody: { model: 'm' }, responseBody });
    assert.equal(outcome.verdict, true);
    assert.equal(outcome.requestBody, undefined);
    assert.deepEqual(outcome.responseBody, {
      ...responseBody,
      choices: [{ index: 0, message: { role: 'assistant', content: 'call 555-XXXX' }, finish_reason: 'stop' }, responseBody.choices[1]],
    });
  });

  it('leaves an unchanged body unset in the outcome', async () => {
    const compiled = compileGuardrails({ input_guardrails: [{ regexReplace: { rule: 'secret' } }] }, new Map());
    const outcome = await runBeforeHooks(compiled, { endpoint: 'completions', requestBody: { model: 'm', prompt: ['a', 'b'] } });
    assert.equal(outcome.requestBody, undefined);
    assert.equal(outcome.results[0]?.transformed, false);
  });

  it('reports a text over the regex cap as an error, which passes', async () => {
    const result = await runOneCheck('default.regexReplace', { rule: 'x' }, 'y'.repeat(MAX_REGEX_TEXT_LENGTH + 1));
    assert.equal(result.verdict, true);
    assert.match(result.error?.message ?? '', /over the 262144 a regex runs on/);
  });
});
