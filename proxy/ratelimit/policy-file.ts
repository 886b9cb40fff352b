import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../private-data-files.ts';

// API-created policies of one kind (rate limits, usage limits) standalone: in memory, persisted
// to a JSON file when a path is given, written atomically (temp file, fsync, rename) so a crash
// never leaves half a file.

interface StoredPolicy {
  readonly id: string;
}

export type NewStoredPolicy<T extends StoredPolicy> = Omit<T, 'id' | 'status' | 'created_at' | 'last_updated_at'>;

export class PolicyFile<T extends StoredPolicy> {
  readonly #path: string | undefined;
  #policies: readonly T[] = [];
  #writing: Promise<void> = Promise.resolve();

  private constructor(path: string | undefined) {
    this.#path = path;
  }

  static inMemory<T extends StoredPolicy>(): PolicyFile<T> {
    return new PolicyFile<T>(undefined);
  }

  /** Opens (or creates) the file at `path`; a corrupt file is an error, never silently emptied. */
  static async open<T extends StoredPolicy>(path: string, schema: z.ZodType<T>): Promise<PolicyFile<T>> {
    const store = new PolicyFile<T>(path);
    let text: string | undefined;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error;
    }
    if (text !== undefined) store.#policies = z.object({ policies: z.array(schema) }).parse(JSON.parse(text)).policies;
    return store;
  }

  get policies(): readonly T[] {
    return this.#policies;
  }

  async create(policy: NewStoredPolicy<T>): Promise<T> {
    const now = new Date().toISOString();
    const created = { ...policy, id: randomUUID(), status: 'active', created_at: now, last_updated_at: now } as unknown as T;
    await this.#commit([...this.#policies, created]);
    return created;
  }

  /** Replaces the policy `id` with what `change` makes of it (stamped with the update time). */
  async update(id: string, change: (existing: T, now: string) => T): Promise<T | undefined> {
    const existing = this.#policies.find((policy) => policy.id === id);
    if (existing === undefined) return undefined;
    const updated = change(existing, new Date().toISOString());
    await this.#commit(this.#policies.map((policy) => (policy.id === id ? updated : policy)));
    return updated;
  }

  // Writes are serialised; memory changes only after the file is safely on disk.
  async #commit(next: readonly T[]): Promise<void> {
    const path = this.#path;
    if (path === undefined) {
      this.#policies = next;
      return;
    }
    const write = this.#writing.then(() => writeAtomically(path, `${JSON.stringify({ policies: next }, null, 2)}\n`));
    this.#writing = write.catch(() => undefined);
    await write;
    this.#policies = next;
  }
}

async function writeAtomically(path: string, text: string): Promise<void> {
  await mkdir(dirname(path), { recursive: true, mode: PRIVATE_DIR_MODE });
  const temporary = `${path}.${process.pid}.${randomUUID()}.tmp`;
  await writeFile(temporary, text, { mode: PRIVATE_FILE_MODE });
  const handle = await open(temporary, 'r');
  try {
    await handle.sync();
  } finally {
    await handle.close();
  }
  await rename(temporary, path);
}
