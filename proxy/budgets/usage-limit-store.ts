import { randomUUID } from 'node:crypto';
import { mkdir, open, readFile, rename, writeFile } from 'node:fs/promises';
import { dirname } from 'node:path';
import { z } from 'zod';
import { PRIVATE_DIR_MODE, PRIVATE_FILE_MODE } from '../private-data-files.ts';
import { UsageLimitPolicySchema, type UsageLimitPolicy } from './usage-limit-schema.ts';

// Where API-created usage-limit policies live: standalone, a JSON file under --data-dir
// (written atomically, like rate-limit-policies.json); in memory for tests.

export type NewUsageLimit = Omit<UsageLimitPolicy, 'id' | 'status' | 'created_at' | 'last_updated_at'>;
export type UsageLimitPatch = Partial<Pick<UsageLimitPolicy, 'status' | 'credit_limit' | 'alert_threshold' | 'max_reservation' | 'fail_open' | 'name'>>;

export interface UsageLimitStore {
  list(): Promise<readonly UsageLimitPolicy[]>;
  create(policy: NewUsageLimit): Promise<UsageLimitPolicy>;
  update(id: string, patch: UsageLimitPatch): Promise<UsageLimitPolicy | undefined>;
  /** The current list without I/O, for the request path. */
  snapshot(): readonly UsageLimitPolicy[];
}

const FileSchema = z.object({ policies: z.array(UsageLimitPolicySchema) });

export class FileUsageLimitStore implements UsageLimitStore {
  readonly #path: string | undefined;
  #policies: readonly UsageLimitPolicy[] = [];
  #writing: Promise<void> = Promise.resolve();

  private constructor(path: string | undefined) {
    this.#path = path;
  }

  static inMemory(): FileUsageLimitStore {
    return new FileUsageLimitStore(undefined);
  }

  /** Opens (or creates) the store at `path`; a corrupt file is an error, never silently emptied. */
  static async open(path: string): Promise<FileUsageLimitStore> {
    const store = new FileUsageLimitStore(path);
    let text: string | undefined;
    try {
      text = await readFile(path, 'utf8');
    } catch (error) {
      if ((error as { code?: string }).code !== 'ENOENT') throw error;
    }
    if (text !== undefined) store.#policies = FileSchema.parse(JSON.parse(text)).policies;
    return store;
  }

  async list(): Promise<readonly UsageLimitPolicy[]> {
    return this.#policies;
  }

  snapshot(): readonly UsageLimitPolicy[] {
    return this.#policies;
  }

  async create(policy: NewUsageLimit): Promise<UsageLimitPolicy> {
    const now = new Date().toISOString();
    const created: UsageLimitPolicy = { ...policy, id: randomUUID(), status: 'active', created_at: now, last_updated_at: now };
    await this.#commit([...this.#policies, created]);
    return created;
  }

  async update(id: string, patch: UsageLimitPatch): Promise<UsageLimitPolicy | undefined> {
    const existing = this.#policies.find((policy) => policy.id === id);
    if (existing === undefined) return undefined;
    const updated = UsageLimitPolicySchema.parse({ ...existing, ...patch, last_updated_at: new Date().toISOString() });
    await this.#commit(this.#policies.map((policy) => (policy.id === id ? updated : policy)));
    return updated;
  }

  // Writes are serialised; memory changes only after the file is safely on disk.
  async #commit(next: readonly UsageLimitPolicy[]): Promise<void> {
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
