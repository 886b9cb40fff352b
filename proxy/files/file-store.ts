import { randomBytes } from 'node:crypto';

// Gateway-managed files (batch inputs, batch outputs): metadata plus content kept in
// chunks, so neither an upload nor a download is ever held whole in memory. Ids start
// with `gwfile-`, which is how the routes tell them from a provider's `file-…` ids.

export const GATEWAY_FILE_PREFIX = 'gwfile-';

/** Content is stored (and read back) in pieces of at most this size. */
export const FILE_CHUNK_BYTES = 256 * 1024;

export type GatewayFilePurpose = 'batch' | 'batch_output';

export interface FileRecord {
  readonly id: string;
  readonly workspace: string;
  readonly purpose: string;
  readonly filename: string;
  readonly bytes: number;
  /** Unix seconds. */
  readonly createdAt: number;
}

export interface FileListQuery {
  readonly after: string | undefined;
  readonly limit: number;
  readonly order: 'asc' | 'desc';
  readonly purpose: string | undefined;
}

export interface Page<T> {
  readonly items: T[];
  readonly hasMore: boolean;
}

export interface NewUpload {
  readonly id: string;
  readonly workspace: string;
  readonly createdMs: number;
}

export interface FileStore {
  /** Starts an upload; it is invisible until completeUpload. */
  beginUpload(upload: NewUpload): Promise<void>;
  appendChunk(id: string, seq: number, data: Buffer): Promise<void>;
  completeUpload(id: string, fields: { purpose: string; filename: string; bytes: number }): Promise<FileRecord>;
  /** Drops a failed upload and its chunks. */
  abortUpload(id: string): Promise<void>;
  get(workspace: string, id: string): Promise<FileRecord | undefined>;
  list(workspace: string, query: FileListQuery): Promise<Page<FileRecord>>;
  /** The content, chunk by chunk. */
  readContent(id: string): AsyncIterable<Buffer>;
  delete(workspace: string, id: string): Promise<boolean>;
}

export function isGatewayFileId(id: string): boolean {
  return id.startsWith(GATEWAY_FILE_PREFIX);
}

export function newGatewayFileId(): string {
  return GATEWAY_FILE_PREFIX + randomBytes(12).toString('hex');
}

/** The OpenAI File object for a gateway-managed file. */
export function toFileObject(file: FileRecord): Record<string, unknown> {
  return {
    id: file.id,
    object: 'file',
    bytes: file.bytes,
    created_at: file.createdAt,
    filename: file.filename,
    purpose: file.purpose,
    status: 'processed',
    status_details: null,
  };
}
