import { DatabaseSync } from 'node:sqlite';
import { preparePrivateFile } from '../private-data-files.ts';

// The one place the gateway opens a SQLite database (batches and files on the main thread,
// request logs in their worker thread), so every database file gets the same mode and
// journal settings.

export interface SqliteOpenOptions {
  /** Enforce foreign keys (the batch tables cascade on them). */
  readonly foreignKeys?: boolean;
  /** Zero deleted and overwritten rows instead of leaving them in free pages (sealed credentials). */
  readonly secureDelete?: boolean;
}

/**
 * Opens (creating, mode 0600) the database at `path` (`:memory:` for a scratch one).
 * WAL: readers never wait for the writer; NORMAL: a commit does not fsync (the WAL
 * checkpoint does), losing at most the last commits on power loss.
 */
export function openSqliteDatabase(path: string, options: SqliteOpenOptions = {}): DatabaseSync {
  preparePrivateFile(path);
  const db = new DatabaseSync(path);
  try {
    db.exec(
      [
        'PRAGMA journal_mode = WAL;',
        'PRAGMA synchronous = NORMAL;',
        'PRAGMA busy_timeout = 5000;',
        options.foreignKeys === true ? 'PRAGMA foreign_keys = ON;' : '',
        options.secureDelete === true ? 'PRAGMA secure_delete = ON;' : '',
      ].join(' '),
    );
  } catch (error) {
    db.close();
    throw error;
  }
  return db;
}
