// The cost of refusing duplicate JSON keys on the hot path: findDuplicateKey on a typical
// chat body (~1.6 KB: system and user messages, a tool), next to the JSON.parse every request
// already pays. A microbenchmark, not a test: numbers depend on the machine and its load.
//   node bench/duplicate-keys.ts
import { findDuplicateKey } from '../proxy/openai/json-duplicate-keys.ts';
const body = {
  model: 'gpt-4o-mini', temperature: 0.7, max_tokens: 256, stream: false, user: 'user-1234',
  metadata: { team: 'search', env: 'prod' },
  messages: [
    { role: 'system', content: 'You are a helpful assistant that answers concisely and cites sources when available. '.repeat(3) },
    { role: 'user', content: 'Summarise the following passage in two sentences: ' + 'Lorem ipsum dolor sit amet, consectetur adipiscing elit. '.repeat(14) },
    { role: 'assistant', content: 'Sure — here is a summary of the passage you sent.' },
    { role: 'user', content: 'Now list three keywords, as JSON {"keywords": [..]}.' },
  ],
  tools: [{ type: 'function', function: { name: 'search', description: 'Search the web', parameters: { type: 'object', properties: { q: { type: 'string' } }, required: ['q'] } } }],
};
const raw = Buffer.from(JSON.stringify(body));
const N = 100_000;
const time = (fn: () => unknown) => {
  const t = process.hrtime.bigint();
  for (let i = 0; i < N; i++) fn();
  return Number(process.hrtime.bigint() - t) / N / 1000;
};
const parse = () => JSON.parse(raw.toString('utf8'));
const scan = () => findDuplicateKey(raw);
time(parse); time(scan);
const p: number[] = [], s: number[] = [];
for (let r = 0; r < 9; r++) { p.push(time(parse)); s.push(time(scan)); }
const med = (a: number[]) => a.sort((x, y) => x - y)[a.length >> 1]!;
process.stdout.write(`| body | JSON.parse | findDuplicateKey | ratio |\n|---:|---:|---:|---:|\n| ${raw.length} B | ${med(p).toFixed(2)} µs | ${med(s).toFixed(2)} µs | ${(med(s) / med(p)).toFixed(2)} |\n`);
