// The Python SDK's standard-library client against a real gateway (in-process, port 0):
// prompt render, rate-limit policies, an inference request with trace id and metadata, and
// an error answer. Skipped when python3 is not on the PATH. (The Python SDK's own unit
// tests run with `python3 -m unittest` in .ci/run.)
import assert from 'node:assert/strict';
import { execFile, spawnSync } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { after, before, test } from 'node:test';
import { DEFAULT_REPLY_TEXT, startMockOpenAI, type MockOpenAI } from '../fixtures/mock-openai.ts';
import { baseState, startHarness, TEST_GATEWAY_KEY, type Harness } from '../helpers/gateway-harness.ts';
import { eventually } from '../helpers/eventually.ts';

const PYTHON_SDK = fileURLToPath(new URL('../../sdk/python', import.meta.url));
const hasPython = spawnSync('python3', ['--version']).status === 0;

const SCRIPT = `
import json
from aigateway import Gateway, GatewayAPIError

gateway = Gateway(provider="@mock", trace_id="py-sdk-1", metadata={"_user": "py-user", "team": "Jos\\u00e9"})
out = {}
out["render"] = gateway.prompts.render("welcome", {"tone": "friendly", "company": "Acme", "name": "Ada"}, temperature=0.9)
policies = gateway.policies.rate_limits
created = policies.create(
    name="python policy",
    conditions=[{"key": "metadata._user", "value": "py-nobody"}],
    group_by=[{"key": "api_key"}],
    type="tokens",
    unit="rpd",
    value=1000,
)
out["created"] = created
out["listed"] = [policy["id"] for policy in policies.list(type="tokens")["data"]]
out["archived"] = policies.archive(created["id"])["status"]
out["archived_listed"] = [policy["id"] for policy in policies.list(status="archived")["data"]]
reply = gateway.request("POST", "/chat/completions", body={"model": "gpt-4o-mini", "messages": [{"role": "user", "content": "hi"}]})
out["chat"] = reply["choices"][0]["message"]["content"]
try:
    gateway.prompts.render("welcome", {"tone": "a"})
except GatewayAPIError as error:
    out["error"] = [error.status, error.code, error.param]
print(json.dumps(out))
`;

interface PythonResult {
  render: { success: boolean; data: { messages: unknown; temperature: number } };
  created: { id: string; object: string };
  listed: string[];
  archived: string;
  archived_listed: string[];
  chat: string;
  error: [number, string, string];
}

let mock: MockOpenAI;
let harness: Harness;

before(async () => {
  if (!hasPython) return;
  mock = await startMockOpenAI();
  harness = await startHarness({
    state: baseState({
      providers: [{ slug: 'mock', provider: 'openai', apiKey: 'sk-m', customHost: mock.url }],
      prompts: [
        {
          id: 'welcome',
          model: 'gpt-4o-mini',
          messages: [
            { role: 'system', content: 'You are a {{tone}} assistant for {{company}}.' },
            { role: 'user', content: 'Greet {{name}}.' },
          ],
        },
      ],
    }),
  });
});
after(async () => {
  if (!hasPython) return;
  await harness.close();
  await mock.close();
});

test('the Python SDK renders a prompt, manages policies and sends trace id and metadata', { skip: !hasPython && 'python3 is not installed' }, async () => {
  // Asynchronous on purpose: the gateway answering the script runs in this process.
  const { stdout } = await promisify(execFile)('python3', ['-c', SCRIPT], {
    cwd: PYTHON_SDK,
    env: { ...process.env, GATEWAY_API_KEY: TEST_GATEWAY_KEY, GATEWAY_BASE_URL: harness.gateway.url, PYTHONPATH: PYTHON_SDK },
    timeout: 20_000,
  });
  const result = JSON.parse(stdout) as PythonResult;
  assert.equal(result.render.success, true);
  assert.deepEqual(result.render.data.messages, [
    { role: 'system', content: 'You are a friendly assistant for Acme.' },
    { role: 'user', content: 'Greet Ada.' },
  ]);
  assert.equal(result.render.data.temperature, 0.9);
  assert.equal(result.created.object, 'rate_limit_policy');
  assert.ok(result.listed.includes(result.created.id));
  assert.equal(result.archived, 'archived');
  assert.ok(result.archived_listed.includes(result.created.id));
  assert.equal(result.chat, DEFAULT_REPLY_TEXT);
  assert.deepEqual(result.error, [400, 'AIGW_ERR_INVALID_BODY', 'variables']);

  await eventually(() => harness.logs.some((line) => line['trace_id'] === 'py-sdk-1' && line['route'] === '/v1/chat/completions'), 'the chat log line', { timeoutMs: 10_000 });
  const line = harness.logs.find((entry) => entry['trace_id'] === 'py-sdk-1' && entry['route'] === '/v1/chat/completions');
  assert.deepEqual(line?.['metadata'], { _user: 'py-user', team: 'José' });
  assert.equal(line?.['status'], 200);
});
