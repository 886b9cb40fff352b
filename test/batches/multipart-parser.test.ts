// The streaming multipart parser against bodies built by the platform's own FormData
// encoder, split at every byte position: parts, names, filenames and exact bytes survive.
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { MultipartParser, multipartBoundary, type MultipartEvent } from '../../proxy/files/multipart-parser.ts';
import { MultipartError } from '../../proxy/errors.ts';

async function encode(form: FormData): Promise<{ body: Buffer; contentType: string }> {
  const request = new Request('http://x/', { method: 'POST', body: form });
  return { body: Buffer.from(await request.arrayBuffer()), contentType: request.headers.get('content-type') ?? '' };
}

function collect(events: MultipartEvent[]): Array<{ name: string; filename: string | undefined; data: string }> {
  const parts: Array<{ name: string; filename: string | undefined; data: string }> = [];
  let data: Buffer[] = [];
  for (const event of events) {
    if (event.kind === 'part') {
      parts.push({ name: event.name, filename: event.filename, data: '' });
      data = [];
    } else if (event.kind === 'data') data.push(event.data);
    else {
      const last = parts.at(-1);
      if (last !== undefined) last.data = Buffer.concat(data).toString('utf8');
    }
  }
  return parts;
}

test('parses every part whatever the chunking', async () => {
  const form = new FormData();
  form.set('purpose', 'batch');
  form.set('file', new Blob(['{"a":1}\r\n--not-a-boundary\r\n{"é":"ü"}\n']), 'in put.jsonl');
  form.set('empty', '');
  const { body, contentType } = await encode(form);
  const boundary = multipartBoundary(contentType);
  assert.ok(boundary !== undefined);
  const expected = [
    { name: 'purpose', filename: undefined, data: 'batch' },
    { name: 'file', filename: 'in put.jsonl', data: '{"a":1}\r\n--not-a-boundary\r\n{"é":"ü"}\n' },
    { name: 'empty', filename: undefined, data: '' },
  ];
  for (let split = 1; split < body.length; split++) {
    const parser: MultipartParser = new MultipartParser(boundary);
    const events: MultipartEvent[] = [...parser.push(body.subarray(0, split)), ...parser.push(body.subarray(split))];
    parser.end();
    assert.deepEqual(collect(events), expected, `split at ${split}`);
  }
  const parser = new MultipartParser(boundary);
  const events: MultipartEvent[] = [];
  for (const byte of body) events.push(...parser.push(Buffer.from([byte])));
  assert.deepEqual(collect(events), expected, 'one byte at a time');
});

test('a body cut before its closing boundary is an error', async () => {
  const form = new FormData();
  form.set('file', new Blob(['x'.repeat(100)]), 'a.jsonl');
  const { body, contentType } = await encode(form);
  const parser = new MultipartParser(multipartBoundary(contentType) ?? '');
  parser.push(body.subarray(0, body.length - 10));
  assert.throws(() => parser.end(), MultipartError);
});

test('the boundary is read from the content type, quoted or not', () => {
  assert.equal(multipartBoundary('multipart/form-data; boundary=abc123'), 'abc123');
  assert.equal(multipartBoundary('multipart/form-data; charset=utf-8; boundary="a b"'), 'a b');
  assert.equal(multipartBoundary('application/json'), undefined);
});
