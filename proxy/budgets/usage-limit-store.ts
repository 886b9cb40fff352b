import { PolicyFile } from '../ratelimit/policy-file.ts';
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

export class FileUsageLimitStore implements UsageLimitStore {
  readonly #file: PolicyFile<UsageLimitPolicy>;

  private constructor(file: PolicyFile<UsageLimitPolicy>) {
    this.#file = file;
  }

  static inMemory(): FileUsageLimitStore {
    return new FileUsageLimitStore(PolicyFile.inMemory<UsageLimitPolicy>());
  }

  /** Opens (or creates) the store at `path`; a corrupt file is an error, never silently emptied. */
  static async open(path: string): Promise<FileUsageLimitStore> {
    return new FileUsageLimitStore(await PolicyFile.open(path, UsageLimitPolicySchema));
  }

  async list(): Promise<readonly UsageLimitPolicy[]> {
    return this.#file.policies;
  }

  snapshot(): readonly UsageLimitPolicy[] {
    return this.#file.policies;
  }

  create(policy: NewUsageLimit): Promise<UsageLimitPolicy> {
    return this.#file.create(policy);
  }

  update(id: string, patch: UsageLimitPatch): Promise<UsageLimitPolicy | undefined> {
    return this.#file.update(id, (existing, now) => UsageLimitPolicySchema.parse({ ...existing, ...patch, last_updated_at: now }));
  }
}
