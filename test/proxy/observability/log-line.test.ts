import assert from 'node:assert/strict';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { test } from 'node:test';
import type { RequestRecord } from '../../../proxy/observability/request-record.ts';
import { createGatewayLogger, logRequest } from '../../../proxy/observability/log-line.ts';

// The file logger batches lines before sonic-boom; whatever the batching, every line must
// reach the file whole, in the order it was logged, once the logger is flushed.

function record(index: number): RequestRecord {
  return {
    traceId: `trace-${index}`,
    method: 'POST',
    route: '/v1/chat/completions',
    status: 200,
    latencyMs: 1.5,
    retries: 0,
    model: 'gpt-4o-mini',
    modelRequested: 'gpt-4o-mini',
  } as unknown as RequestRecord;
}

test('request lines and other log lines reach the file whole and in order after flush', async () => {
  const dir = await mkdtemp(join(tmpdir(), 'aigw-log-line-'));
  try {
    const path = join(dir, 'requests.log');
    const logger = createGatewayLogger({ destination: path });
    // Enough lines to cross the 16 KiB batch several times, with pino's own lines between.
    for (let index = 0; index < 500; index++) {
      logRequest(logger, record(index), false);
      if (index % 100 === 50) logger.warn({ index }, 'between');
    }
    await new Promise<void>((resolve, reject) => logger.flush((error) => (error ? reject(error) : resolve())));
    const lines = (await readFile(path, 'utf8')).trimEnd().split('\n').map((line) => JSON.parse(line) as Record<string, unknown>);
    const expected: string[] = [];
    for (let index = 0; index < 500; index++) {
      expected.push(`trace-${index}`);
      if (index % 100 === 50) expected.push(`warn-${index}`);
    }
    assert.deepEqual(
      lines.map((line) => (line['msg'] === 'between' ? `warn-${String(line['index'])}` : String(line['trace_id']))),
      expected,
    );
    assert.equal(lines[0]?.['status'], 200);
  } finally {
    await rm(dir, { recursive: true, force: true });
  }
});
