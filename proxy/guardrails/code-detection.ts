// Which programming languages a text contains code in: the language tags of its fenced
// blocks (```sql), plus, for code pasted without fences, heuristics for the languages
// that have unmistakable shapes. Heuristics trade recall for few false positives: prose
// like "select a book from the shelf" must not read as SQL.

import { findJsonValues } from './json-in-text.ts';

/** The formats containsCode knows, by their display names. */
export const CODE_FORMATS = [
  'SQL', 'Python', 'TypeScript', 'JavaScript', 'Java', 'C#', 'C++', 'C', 'Ruby', 'PHP', 'Swift', 'Kotlin',
  'Go', 'Rust', 'Scala', 'R', 'Perl', 'Shell', 'HTML', 'CSS', 'XML', 'JSON', 'YAML', 'Markdown', 'Dockerfile',
] as const;

export type CodeFormat = (typeof CODE_FORMATS)[number];

/** Fence tags (lower-cased) and other spellings → format. */
const ALIASES: Readonly<Record<string, CodeFormat>> = {
  ...Object.fromEntries(CODE_FORMATS.map((format) => [format.toLowerCase(), format])),
  mysql: 'SQL', postgresql: 'SQL', postgres: 'SQL', psql: 'SQL', sqlite: 'SQL', plsql: 'SQL', tsql: 'SQL',
  py: 'Python', python3: 'Python', py3: 'Python',
  ts: 'TypeScript', tsx: 'TypeScript', mts: 'TypeScript',
  js: 'JavaScript', jsx: 'JavaScript', mjs: 'JavaScript', cjs: 'JavaScript', node: 'JavaScript',
  cs: 'C#', csharp: 'C#',
  cpp: 'C++', cc: 'C++', cxx: 'C++', hpp: 'C++',
  h: 'C',
  rb: 'Ruby',
  kt: 'Kotlin', kts: 'Kotlin',
  golang: 'Go',
  rs: 'Rust',
  pl: 'Perl',
  sh: 'Shell', bash: 'Shell', zsh: 'Shell', console: 'Shell', shellscript: 'Shell', shell: 'Shell',
  htm: 'HTML', xhtml: 'HTML',
  scss: 'CSS', less: 'CSS',
  svg: 'XML',
  jsonc: 'JSON', json5: 'JSON',
  yml: 'YAML',
  md: 'Markdown',
  docker: 'Dockerfile',
};

/** A format by any of its spellings (`py`, `python`, `Python`), or undefined. */
export function resolveCodeFormat(name: string): CodeFormat | undefined {
  return ALIASES[name.trim().toLowerCase()];
}

// The opening fence's info string: its first word is the language.
const FENCE_TAG = /^[ \t]*(?:```|~~~)[ \t]*([^\s`{]+)/gm;

/** Formats named by fenced blocks' language tags. */
export function fencedFormats(text: string): Set<CodeFormat> {
  const found = new Set<CodeFormat>();
  for (const match of text.matchAll(FENCE_TAG)) {
    const format = resolveCodeFormat(match[1] ?? '');
    if (format !== undefined) found.add(format);
  }
  return found;
}

// Each pattern is linear on its own: no nested or adjacent unbounded quantifiers over
// overlapping characters.
const HEURISTICS: ReadonlyArray<readonly [CodeFormat, RegExp]> = [
  ['SQL', /\b(?:INSERT\s+INTO|DELETE\s+FROM|DROP\s+(?:TABLE|DATABASE|VIEW)|CREATE\s+(?:TABLE|INDEX|VIEW)|ALTER\s+TABLE|UNION\s+(?:ALL\s+)?SELECT|TRUNCATE\s+TABLE)\b/i],
  ['SQL', /\bSELECT\s[^;\n]{1,200}?\bFROM\s+\w/],
  ['SQL', /\bselect\s+(?:\*|[\w.]+\s*,\s*[\w.]+)\s+from\s+\w/i],
  ['SQL', /\bUPDATE\s+\w+\s+SET\s+\w+\s*=/i],
  ['Python', /^[ \t]*(?:async[ \t]+)?def[ \t]+\w+[ \t]*\([^)\n]*\)[ \t]*(?:->[^:\n]{1,80})?:[ \t]*$/m],
  ['Python', /^[ \t]*from[ \t]+[\w.]+[ \t]+import[ \t]+[\w*]/m],
  ['Python', /^[ \t]*class[ \t]+\w+(?:\([^)\n]*\))?:[ \t]*$/m],
  ['Python', /if[ \t]+__name__[ \t]*==[ \t]*['"]__main__['"]/],
  ['TypeScript', /^[ \t]*(?:export[ \t]+)?interface[ \t]+\w+(?:<[^>\n]*>)?[ \t]*(?:extends[ \t][^{\n]*)?\{/m],
  ['TypeScript', /^[ \t]*(?:export[ \t]+)?type[ \t]+\w+(?:<[^>\n]*>)?[ \t]*=[ \t]*\S/m],
  ['TypeScript', /\b(?:const|let|var)[ \t]+\w+[ \t]*:[ \t]*(?:string|number|boolean|unknown|Record<)/],
  ['JavaScript', /\bfunction\*?[ \t]*\w*[ \t]*\([^)\n]*\)[ \t]*\{/],
  ['JavaScript', /\b(?:const|let|var)[ \t]+[\w$]+[ \t]*=[ \t]*(?:require\(|async\b|function\b|\(|\[|\{|new\b|await\b|['"`\d])/],
  ['JavaScript', /\bconsole\.(?:log|error|warn)\(|\bdocument\.(?:getElementById|querySelector)\(|\brequire\(['"]/],
  ['JavaScript', /^[ \t]*import[ \t][^\n]{1,200}?[ \t]from[ \t]+['"][^'"\n]+['"]/m],
  ['Shell', /^#!\/(?:usr\/)?bin\/(?:env[ \t]+)?(?:ba|z|da)?sh\b/m],
  ['Shell', /\b(?:sudo[ \t]+\w|rm[ \t]+-[rf]{1,2}\b|chmod[ \t]+[+\d]|(?:apt-get|apt|yum|brew)[ \t]+install\b|curl[ \t]+-\w)/],
  ['HTML', /<(?:html|head|body|div|span|script|iframe|form|table|style)\b[^>\n]{0,200}>/i],
  ['PHP', /<\?php\b/],
  ['XML', /^[ \t]*<\?xml[ \t]/m],
  ['Dockerfile', /^FROM[ \t]+\S+[^\n]*\n(?:[^\n]*\n){0,20}?(?:RUN|CMD|COPY|ENTRYPOINT)[ \t]/m],
];

/** Formats recognised by heuristics in text that is not fenced. */
export function heuristicFormats(text: string): Set<CodeFormat> {
  const found = new Set<CodeFormat>();
  for (const [format, pattern] of HEURISTICS) if (!found.has(format) && pattern.test(text)) found.add(format);
  // TypeScript is a superset: TypeScript code is also JavaScript code.
  if (found.has('TypeScript')) found.add('JavaScript');
  const json = findJsonValues(text);
  if (json.some((value) => typeof value === 'object' && value !== null && Object.keys(value).length > 0)) found.add('JSON');
  return found;
}

/** Every format found in `text`, fenced or not. */
export function detectCodeFormats(text: string): { fenced: Set<CodeFormat>; heuristic: Set<CodeFormat> } {
  return { fenced: fencedFormats(text), heuristic: heuristicFormats(text) };
}
