import { chmodSync, closeSync, existsSync, mkdirSync, openSync } from 'node:fs';
import { dirname } from 'node:path';

// Every file the gateway keeps under its data directory (SQLite databases and their
// -wal/-shm, the policy store, the secret key) is readable by the gateway's user only:
// files 0600, directories it creates 0700. SQLite creates -wal and -shm with the mode of
// the database file, so creating that one 0600 first covers the others.

export const PRIVATE_FILE_MODE = 0o600;
export const PRIVATE_DIR_MODE = 0o700;

/** Creates `path` (and missing parent directories) owner-only, or narrows an existing one. */
export function preparePrivateFile(path: string): void {
  if (path === ':memory:' || path === '') return;
  const dir = dirname(path);
  if (!existsSync(dir)) mkdirSync(dir, { recursive: true, mode: PRIVATE_DIR_MODE });
  closeSync(openSync(path, 'a', PRIVATE_FILE_MODE));
  chmodSync(path, PRIVATE_FILE_MODE);
  // A database opened by an older version may have left these 0644.
  for (const companion of [`${path}-wal`, `${path}-shm`, `${path}-journal`]) {
    if (existsSync(companion)) chmodSync(companion, PRIVATE_FILE_MODE);
  }
}
