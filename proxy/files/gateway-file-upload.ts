import type { Readable } from 'node:stream';
import { GatewayError, MultipartError } from '../errors.ts';
import { FILE_CHUNK_BYTES, newGatewayFileId, type FileRecord, type FileStore } from './file-store.ts';
import { MultipartParser, multipartBoundary } from './multipart-parser.ts';

// POST /v1/files kept by the gateway: the multipart body is parsed as it streams in and the
// `file` part written to the store chunk by chunk; `purpose` must be "batch" (gateway files
// are batch inputs). Nothing is visible until the whole upload is stored.

const MAX_FIELD_BYTES = 1024;

export interface GatewayUpload {
  readonly body: Readable;
  readonly contentType: string | undefined;
  readonly workspace: string;
  readonly nowMs: number;
  /** Larger files get 413 (default 200 MiB, OpenAI's batch file limit). */
  readonly maxFileBytes: number;
}

export const DEFAULT_MAX_FILE_BYTES = 200 * 1024 * 1024;

export async function storeGatewayUpload(files: FileStore, upload: GatewayUpload): Promise<FileRecord> {
  const boundary = multipartBoundary(upload.contentType);
  if (boundary === undefined) {
    throw new GatewayError('AIGW_ERR_UNSUPPORTED_MEDIA_TYPE', 'File uploads are multipart/form-data with a boundary.', { param: 'content-type' });
  }
  const id = newGatewayFileId();
  await files.beginUpload({ id, workspace: upload.workspace, createdMs: upload.nowMs });
  const parser = new MultipartParser(boundary);
  let part: 'file' | 'purpose' | 'other' | undefined;
  let filename: string | undefined;
  let purpose = '';
  let sawFile = false;
  let pending: Buffer[] = [];
  let pendingBytes = 0;
  let total = 0;
  let seq = 0;
  const flush = async (): Promise<void> => {
    if (pendingBytes === 0) return;
    const data = Buffer.concat(pending);
    pending = [];
    pendingBytes = 0;
    await files.appendChunk(id, seq++, data);
  };
  try {
    for await (const chunk of upload.body) {
      for (const event of parser.push(chunk as Buffer)) {
        if (event.kind === 'part') {
          part = event.name === 'file' ? 'file' : event.name === 'purpose' ? 'purpose' : 'other';
          if (part === 'file') {
            if (sawFile) throw invalid('Send one file per upload.', 'file');
            sawFile = true;
            filename = event.filename;
          }
        } else if (event.kind === 'data') {
          if (part === 'purpose') {
            purpose += event.data.toString('utf8');
            if (purpose.length > MAX_FIELD_BYTES) throw invalid('purpose is too long.', 'purpose');
          } else if (part === 'file') {
            total += event.data.length;
            if (total > upload.maxFileBytes) {
              throw new GatewayError('AIGW_ERR_BODY_TOO_LARGE', `Gateway-managed files are at most ${upload.maxFileBytes} bytes.`, { param: 'file' });
            }
            pending.push(event.data);
            pendingBytes += event.data.length;
            if (pendingBytes >= FILE_CHUNK_BYTES) await flush();
          }
        } else {
          part = undefined;
        }
      }
    }
    parser.end();
    await flush();
    if (!sawFile) throw invalid("Missing required parameter: 'file'.", 'file');
    if (purpose === '') throw invalid("Missing required parameter: 'purpose'.", 'purpose');
    if (purpose !== 'batch') {
      throw invalid(`Gateway-managed files are batch inputs: purpose must be "batch" (got "${purpose}"); other files go to the provider.`, 'purpose');
    }
    return await files.completeUpload(id, { purpose, filename: filename ?? 'upload.jsonl', bytes: total });
  } catch (error) {
    await files.abortUpload(id).catch(() => undefined);
    if (error instanceof MultipartError) throw invalid(`Invalid multipart body: ${error.message}.`, 'file');
    throw error;
  }
}

function invalid(message: string, param: string): GatewayError {
  return new GatewayError('AIGW_ERR_INVALID_BODY', message, { param });
}
