// Anthropic translation, table-driven from test/fixtures/providers/anthropic/*.json.
import { runGoldenSuite } from './golden-runner.ts';

runGoldenSuite(new URL('../../fixtures/providers/anthropic/', import.meta.url), { title: 'anthropic golden fixtures' });
