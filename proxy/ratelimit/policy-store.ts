import { randomUUID } from 'node:crypto';
import { mkdir, readFile, rename, writeFile, open } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../private-data-files.ts';
import { RateLimitPolicySchema, type RateLimitPolicy } from './policy-schema.ts';

// Where API-created policies live. Standalone: a JSON file under --data-dir, written
// atomically (temp file, fsync, rename) so a crash never leaves half a file. In a cluster
// the operator implements the same interface with RateLimitPolicy resources.

export interface NewPolicy extends Omit<RateLimitPolicy, 'id' | 'status' | 'created_at' | 'last_updated_at'> {}

export interface PolicyStore {
  list(): Promise<readonly RateLimitPolicy[]>;
  create(policy: NewPolicy): Promise<RateLimitPolicy>;
  update(id: string, patch: Partial<Pick<RateLimitPolicy, 'status' | 'value' | 'name'>>): Promise<RateLimitPolicy | undefined>;
  /** The current list without I/O (kept in memory), for enforcement on the request path. */
  snapshot(): readonly RateLimitPolicy[];
}

const FileSchema = z.object({ policies: z.array(RateLimitPolicySchema) });

/** Policies in memory, persisted to a JSON file when a path is given. */
export class FilePolicyStore implements PolicyStore {
  readonly #path: string | undefined;
  #policies: readonly RateLimitPolicy[] = [];
  #writing: Promise<void> = Promise.resolve();

  private constructor(path: string | undefined) {
    this.#path = path;
  }

  /** A store that keeps nothing on disk (tests, ephemeral gateways). */
  static inMemory(): FilePolicyStore {
    return new FilePolicyStore(undefined);
  }

  /** Opens (or creates) the store at `path`; a corrupt file is an error, never silently emptied. */
  static async open(path: string): Promise<FilePolicyStore> {
    const store = new FilePolicyStore(path);
    let text: string | undefined;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error;
    }
    if (text !== undefined) store.#policies = FileSchema.parse(JSON.parse(text)).policies;
    return store;
  }

  async list(): Promise<readonly RateLimitPolicy[]> {
    return this.#policies;
  }

  snapshot(): readonly RateLimitPolicy[] {
    return this.#policies;
  }

  async create(policy: NewPolicy): Promise<RateLimitPolicy> {
    const now = new Date().toISOString();
    const created: RateLimitPolicy = { ...policy, id: randomUUID(), status: 'active', created_at: now, last_updated_at: now };
    await this.#commit([...this.#policies, created]);
    return created;
  }

  async update(id: string, patch: Partial<Pick<RateLimitPolicy, 'status' | 'value' | 'name'>>): Promise<RateLimitPolicy | undefined> {
    const existing = this.#policies.find((policy) => policy.id === id);
    if (existing === undefined) return undefined;
    const updated: RateLimitPolicy = { ...existing, ...patch, last_updated_at: new Date().toISOString() };
    await this.#commit(this.#policies.map((policy) => (policy.id === id ? updated : policy)));
    return updated;
  }

  // Writes are serialised; memory changes only after the file is safely on disk.
  async #commit(next: readonly RateLimitPolicy[]): Promise<void> {
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
