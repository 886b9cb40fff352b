// `${NAME}` and `${NAME:-default}` in string values of the state file are replaced by
// environment variables; `$${…}` keeps a literal `${…}`. Substitution runs on parsed
// values, not on the YAML text, so a secret containing YAML syntax cannot change the
// document's structure.

const PLACEHOLDER = /\$(\$?)\{([A-Za-z_][A-Za-z0-9_]*)(?::-([^}]*))?\}/g;

export interface SubstitutionResult {
  value: unknown;
  /** `path: message` for every variable that is unset and has no default. */
  issues: string[];
}

export function substituteEnv(
  value: unknown,
  env: Readonly<Record<string, string | undefined>>,
): SubstitutionResult {
  const issues: string[] = [];
  const walk = (node: unknown, path: string): unknown => {
    if (typeof node === 'string') return substituteString(node, env, path, issues);
    if (Array.isArray(node)) return node.map((item, index) => walk(item, `${path}[${index}]`));
    if (node !== null && typeof node === 'object') {
      const out: Record<string, unknown> = {};
      for (const [key, child] of Object.entries(node)) {
        out[key] = walk(child, path === '' ? key : `${path}.${key}`);
      }
      return out;
    }
    return node;
  };
  return { value: walk(value, ''), issues };
}

function substituteString(
  text: string,
  env: Readonly<Record<string, string | undefined>>,
  path: string,
  issues: string[],
): string {
  if (!text.includes('${')) return text;
  return text.replace(PLACEHOLDER, (whole, escape: string, name: string, fallback: string | undefined) => {
    if (escape === '$') return whole.slice(1);
    const found = env[name];
    if (found !== undefined && found !== '') return found;
    if (fallback !== undefined) return fallback;
    issues.push(`${path || 'document'}: environment variable ${name} is not set`);
    return '';
  });
}
