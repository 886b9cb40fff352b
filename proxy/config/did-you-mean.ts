// "Did you mean …?" for a name that names nothing: the closest known name by edit distance,
// when it is close enough to be a typo (`opena1` → `openai`, `bakup` → `backup`).

/** Edit distance: insertions, deletions, substitutions and swaps of two neighbours (`retyr` → `retry` is 1). */
export function editDistance(a: string, b: string): number {
  if (a === b) return 0;
  // Three rows: the swap looks two rows back (optimal string alignment).
  let before = new Array<number>(b.length + 1).fill(0);
  let previous = Array.from({ length: b.length + 1 }, (_, index) => index);
  let current = new Array<number>(b.length + 1).fill(0);
  for (let i = 1; i <= a.length; i++) {
    current[0] = i;
    for (let j = 1; j <= b.length; j++) {
      const cost = a[i - 1] === b[j - 1] ? 0 : 1;
      let best = Math.min((previous[j] as number) + 1, (current[j - 1] as number) + 1, (previous[j - 1] as number) + cost);
      if (i > 1 && j > 1 && a[i - 1] === b[j - 2] && a[i - 2] === b[j - 1]) best = Math.min(best, (before[j - 2] as number) + 1);
      current[j] = best;
    }
    [before, previous, current] = [previous, current, before];
  }
  return previous[b.length] as number;
}

/**
 * The known name closest to `name`, if it is within a third of the name's length (at least
 * 1, at most 3 edits); ties go to the first in `known`.
 *
 * @example closestName('opena1', ['openai', 'groq']) // → 'openai'
 */
export function closestName(name: string, known: Iterable<string>): string | undefined {
  const limit = Math.min(3, Math.max(1, Math.floor(name.length / 3)));
  let best: string | undefined;
  let bestDistance = limit + 1;
  const lower = name.toLowerCase();
  for (const candidate of known) {
    const distance = editDistance(lower, candidate.toLowerCase());
    if (distance < bestDistance) {
      best = candidate;
      bestDistance = distance;
    }
  }
  return best;
}

/** ` (did you mean "x"?)`, or an empty string when nothing is close. */
export function didYouMean(name: string, known: Iterable<string>, prefix = ''): string {
  const closest = closestName(name, known);
  return closest === undefined ? '' : ` (did you mean "${prefix}${closest}"?)`;
}
