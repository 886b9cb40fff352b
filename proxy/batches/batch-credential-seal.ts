import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { closeSync, openSync, readFileSync, writeSync } from 'node:fs';
import { join } from 'node:path';
import { PRIVATE_FILE_MODE, preparePrivateFile } from '../private-data-files.ts';

// A gateway-managed batch runs each line with its creator's headers, gateway key and
// provider credentials included, so they must be stored until the batch ends. They are
// stored sealed (AES-256-GCM, the batch id as associated data, so a sealed value copied to
// another row does not open) and wiped when the batch ends.
//
// The key: AIGATEWAY_SECRET_KEY (at least 32 characters; every replica sharing a database
// needs the same one), else, standalone, `secret.key` next to the SQLite database,
// generated once with mode 0600.

export const SECRET_KEY_ENV = 'AIGATEWAY_SECRET_KEY';
export const SECRET_KEY_FILE = 'secret.key';
const MIN_SECRET_CHARS = 32;
const PREFIX = 'aes256gcm:v1:';
const IV_BYTES = 12;
const TAG_BYTES = 16;

export class BatchCredentialSeal {
  readonly #key: Buffer;

  constructor(key: Buffer) {
    if (key.length !== 32) throw new Error('the batch credential key must be 32 bytes');
    this.#key = key;
  }

  /** From a configured secret: any string of 32+ characters (e.g. `openssl rand -base64 32`). */
  static fromSecret(secret: string): BatchCredentialSeal {
    if (secret.length < MIN_SECRET_CHARS) throw new Error(`${SECRET_KEY_ENV} must be at least ${MIN_SECRET_CHARS} characters`);
    return new BatchCredentialSeal(createHash('sha256').update(secret, 'utf8').digest());
  }

  /** The key in `dir/secret.key`, created (0600, exclusively) on first use. */
  static fromKeyFile(dir: string): BatchCredentialSeal {
    const path = join(dir, SECRET_KEY_FILE);
    try {
      const fd = openSync(path, 'wx', PRIVATE_FILE_MODE);
      try {
        writeSync(fd, `${randomBytes(32).toString('base64')}\n`);
      } finally {
        closeSync(fd);
      }
    } catch (error) {
      if ((error as { code?: string }).code !== 'EEXIST') throw error;
    }
    preparePrivateFile(path);
    return BatchCredentialSeal.fromSecret(readFileSync(path, 'utf8').trim());
  }

  seal(batchId: string, headers: Readonly<Record<string, string>>): string {
    const iv = randomBytes(IV_BYTES);
    const cipher = createCipheriv('aes-256-gcm', this.#key, iv);
    cipher.setAAD(Buffer.from(batchId, 'utf8'));
    const body = Buffer.concat([cipher.update(JSON.stringify(headers), 'utf8'), cipher.final()]);
    return PREFIX + Buffer.concat([iv, cipher.getAuthTag(), body]).toString('base64');
  }

  /** The headers, or undefined when the value does not open with this key (wrong key, tampered). */
  open(batchId: string, stored: string): Record<string, string> | undefined {
    if (stored === '' || stored === '{}') return {};
    if (stored.startsWith('{')) return parseLegacy(stored); // stored in the clear by an earlier version
    if (!stored.startsWith(PREFIX)) return undefined;
    const raw = Buffer.from(stored.slice(PREFIX.length), 'base64');
    if (raw.length < IV_BYTES + TAG_BYTES) return undefined;
    try {
      const decipher = createDecipheriv('aes-256-gcm', this.#key, raw.subarray(0, IV_BYTES));
      decipher.setAAD(Buffer.from(batchId, 'utf8'));
      decipher.setAuthTag(raw.subarray(IV_BYTES, IV_BYTES + TAG_BYTES));
      const text = Buffer.concat([decipher.update(raw.subarray(IV_BYTES + TAG_BYTES)), decipher.final()]).toString('utf8');
      return JSON.parse(text) as Record<string, string>;
    } catch {
      return undefined;
    }
  }
}

function parseLegacy(text: string): Record<string, string> | undefined {
  try {
    return JSON.parse(text) as Record<string, string>;
  } catch {
    return undefined;
  }
}
