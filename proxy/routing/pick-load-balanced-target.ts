// Weighted random choice for loadbalance (DESIGN.md §2): weight default 1, weight 0 never
// picked. Pure given the random source, so tests check the distribution deterministically.

export interface Weighted {
  readonly weight: number;
}

/** Picks one candidate with probability weight / total; undefined when none has weight > 0. */
export function pickLoadBalancedChild<T extends Weighted>(candidates: readonly T[], random: () => number): T | undefined {
  let total = 0;
  for (const candidate of candidates) if (candidate.weight > 0) total += candidate.weight;
  if (total <= 0) return undefined;
  let point = random() * total;
  let lastPositive: T | undefined;
  for (const candidate of candidates) {
    if (candidate.weight <= 0) continue;
    lastPositive = candidate;
    point -= candidate.weight;
    if (point < 0) return candidate;
  }
  // Floating-point rounding can leave point at ~0: the last positive candidate takes it.
  return lastPositive;
}
