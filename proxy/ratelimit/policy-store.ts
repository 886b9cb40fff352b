import { PolicyFile } from './policy-file.ts';
import { RateLimitPolicySchema, type RateLimitPolicy } from './policy-schema.ts';

// Where API-created policies live. Standalone: a JSON file under --data-dir, written
// atomically (policy-file.ts). In a cluster the operator implements the same interface with
// RateLimitPolicy resources.

export interface NewPolicy extends Omit<RateLimitPolicy, 'id' | 'status' | 'created_at' | 'last_updated_at'> {}

export interface PolicyStore {
  list(): Promise<readonly RateLimitPolicy[]>;
  create(policy: NewPolicy): Promise<RateLimitPolicy>;
  update(id: string, patch: Partial<Pick<RateLimitPolicy, 'status' | 'value' | 'name'>>): Promise<RateLimitPolicy | undefined>;
  /** The current list without I/O (kept in memory), for enforcement on the request path. */
  snapshot(): readonly RateLimitPolicy[];
}

/** Policies in memory, persisted to a JSON file when a path is given. */
export class FilePolicyStore implements PolicyStore {
  readonly #file: PolicyFile<RateLimitPolicy>;

  private constructor(file: PolicyFile<RateLimitPolicy>) {
    this.#file = file;
  }

  /** A store that keeps nothing on disk (tests, ephemeral gateways). */
  static inMemory(): FilePolicyStore {
    return new FilePolicyStore(PolicyFile.inMemory<RateLimitPolicy>());
  }

  /** Opens (or creates) the store at `path`; a corrupt file is an error, never silently emptied. */
  static async open(path: string): Promise<FilePolicyStore> {
    return new FilePolicyStore(await PolicyFile.open(path, RateLimitPolicySchema));
  }

  async list(): Promise<readonly RateLimitPolicy[]> {
    return this.#file.policies;
  }

  snapshot(): readonly RateLimitPolicy[] {
    return this.#file.policies;
  }

  create(policy: NewPolicy): Promise<RateLimitPolicy> {
    return this.#file.create(policy);
  }

  update(id: string, patch: Partial<Pick<RateLimitPolicy, 'status' | 'value' | 'name'>>): Promise<RateLimitPolicy | undefined> {
    return this.#file.update(id, (existing, now) => ({ ...existing, ...patch, last_updated_at: now }));
  }
}
