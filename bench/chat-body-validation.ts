// What validating the harness's chat body costs: zod's safeParse of chatCompletionsBodySchema
// (what every request paid before the fast check) against validateRequestBody (the fast check,
// zod only for what it does not know), and the duplicate-key scan beside them. A
// microbenchmark, not a test: numbers depend on the machine and its load.
//   node bench/chat-body-validation.ts
import { validateRequestBody } from '../proxy/openai/body-validation.ts';
import { chatCompletionsBodySchema } from '../proxy/openai/chat-completions-body.ts';
import { findDuplicateKey } from '../proxy/openai/json-duplicate-keys.ts';
import { harnessChatBody } from './harness-body.ts';

const raw = harnessChatBody(false);
const body = JSON.parse(raw.toString('utf8')) as Record<string, unknown>;
const N = 100_000;
const time = (run: () => unknown): number => {
  const start = process.hrtime.bigint();
  for (let index = 0; index < N; index++) run();
  return Number(process.hrtime.bigint() - start) / N;
};
const cases: Array<[string, () => unknown]> = [
  ['zod safeParse', () => chatCompletionsBodySchema.safeParse(body)],
  ['validateRequestBody', () => validateRequestBody('chat.completions', body)],
  ['findDuplicateKey', () => findDuplicateKey(raw)],
  ['JSON.parse (for scale)', () => JSON.parse(raw.toString('utf8'))],
];
for (const [, run] of cases) time(run);
const rounds = cases.map((): number[] => []);
for (let round = 0; round < 7; round++) cases.forEach(([, run], index) => rounds[index]?.push(time(run)));
const median = (values: number[]): number => [...values].sort((a, b) => a - b)[values.length >> 1] ?? Number.NaN;
process.stdout.write(`| ${raw.length}-byte harness body | ns per call (median of 7 rounds of ${N}) |\n|---|---:|\n`);
cases.forEach(([name], index) => process.stdout.write(`| ${name} | ${median(rounds[index] ?? []).toFixed(0)} |\n`));
