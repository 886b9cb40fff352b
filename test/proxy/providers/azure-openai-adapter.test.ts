// Azure OpenAI (cloudA) URL, auth and passthrough, table-driven from
// test/fixtures/providers/azure-openai/*.json.
import { runGoldenSuite } from './golden-runner.ts';

runGoldenSuite(new URL('../../fixtures/providers/azure-openai/', import.meta.url), { title: 'azure-openai golden fixtures' });
