import { randomBytes } from 'node:crypto';

// Lines of a batch's output and error files, in OpenAI's batch output format (pure):
//   {"id":"batch_req_…","custom_id":"…","response":{"status_code":200,"request_id":"…","body":{…}},"error":null}
// A request that got an HTTP answer carries `response` (2xx → output file, else error
// file); one that never got an answer carries `error` with `response: null`.

export interface LineResponse {
  readonly statusCode: number;
  readonly requestId: string;
  /** The answer's text; JSON is embedded as JSON, anything else as a string. */
  readonly bodyText: string;
}

export interface LineError {
  readonly code: string;
  readonly message: string;
}

/** Code of a line that was in flight when its gateway process died (never re-sent). */
export const INTERRUPTED_LINE_CODE = 'batch_line_interrupted';

export function responseLine(customId: string, response: LineResponse): string {
  return JSON.stringify({
    id: newRequestId(),
    custom_id: customId,
    response: { status_code: response.statusCode, request_id: response.requestId, body: parseBody(response.bodyText) },
    error: null,
  });
}

export function errorLine(customId: string, error: LineError): string {
  return JSON.stringify({ id: newRequestId(), custom_id: customId, response: null, error: { code: error.code, message: error.message } });
}

export function interruptedLine(customId: string): string {
  return errorLine(customId, {
    code: INTERRUPTED_LINE_CODE,
    message:
      'The gateway process running this request stopped before it finished. It was not sent again, so that no request runs twice; resubmit it if needed.',
  });
}

export function isSuccessStatus(status: number): boolean {
  return status >= 200 && status < 300;
}

function parseBody(text: string): unknown {
  try {
    return JSON.parse(text);
  } catch {
    return text;
  }
}

function newRequestId(): string {
  return `batch_req_${randomBytes(12).toString('hex')}`;
}
