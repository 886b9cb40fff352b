import { StringDecoder } from 'node:string_decoder';

// A batch input file, line by line (pure). Each JSONL line is one request:
//   {"custom_id": "req-1", "method": "POST", "url": "/v1/chat/completions", "body": {…}}
// The whole file is checked before anything runs — like OpenAI, a file with a bad line
// fails the batch (`failed`, with `errors.data[]` naming each line) instead of running
// half of it.

/** OpenAI's per-batch request limit. */
export const MAX_BATCH_LINES = 50_000;
/** Errors reported per batch; the rest are counted in the last message. */
export const MAX_REPORTED_ERRORS = 100;

export interface BatchLineRequest {
  readonly method: 'POST';
  readonly url: string;
  readonly body: Record<string, unknown>;
}

export interface BatchInputLine {
  /** 1-based line number in the file. */
  readonly lineNo: number;
  readonly customId: string;
  readonly request: BatchLineRequest;
}

/** An item of the batch's `errors.data`. */
export interface BatchInputError {
  readonly code: string;
  readonly message: string;
  readonly param: string | null;
  readonly line: number | null;
}

/** Splits streamed bytes into text lines; multi-byte characters may straddle chunks. */
export class JsonlLineSplitter {
  readonly #decoder = new StringDecoder('utf8');
  #partial = '';

  push(chunk: Buffer): string[] {
    const text = this.#partial + this.#decoder.write(chunk);
    const lines = text.split('\n');
    this.#partial = lines.pop() ?? '';
    return lines;
  }

  end(): string[] {
    const rest = this.#partial + this.#decoder.end();
    this.#partial = '';
    return rest === '' ? [] : [rest];
  }
}

/** Checks one line against the batch's endpoint; `seen` collects custom_ids for uniqueness. */
export function parseBatchLine(text: string, lineNo: number, endpoint: string, seen: Set<string>): BatchInputLine | BatchInputError {
  const fail = (code: string, message: string, param: string | null): BatchInputError => ({ code, message, param, line: lineNo });
  let parsed: unknown;
  try {
    parsed = JSON.parse(text);
  } catch {
    return fail('invalid_json_line', `Line ${lineNo} is not valid JSON.`, null);
  }
  if (!isRecord(parsed)) return fail('invalid_request', `Line ${lineNo} must be a JSON object.`, null);
  const { custom_id: customId, method, url, body } = parsed;
  if (typeof customId !== 'string' || customId === '') {
    return fail('missing_required_parameter', `Line ${lineNo}: custom_id must be a non-empty string.`, 'custom_id');
  }
  if (seen.has(customId)) return fail('duplicate_custom_id', `Line ${lineNo}: custom_id "${customId}" is used more than once.`, 'custom_id');
  if (method !== 'POST') return fail('invalid_request', `Line ${lineNo}: method must be POST.`, 'method');
  if (url !== endpoint) {
    return fail('mismatched_endpoint', `Line ${lineNo}: url must be the batch's endpoint ${endpoint}.`, 'url');
  }
  if (!isRecord(body)) return fail('invalid_request', `Line ${lineNo}: body must be a JSON object.`, 'body');
  if (body['stream'] === true) return fail('invalid_request', `Line ${lineNo}: streaming is not supported in batches.`, 'body.stream');
  seen.add(customId);
  return { lineNo, customId, request: { method: 'POST', url, body } };
}

export function isInputError(value: BatchInputLine | BatchInputError): value is BatchInputError {
  return 'code' in value;
}

function isRecord(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
