/**
 * Interface 4.4 rule 3: each type gets an equal share of the limit, rounded up, and the results are
 * dealt type by type (the first of each type in the requested order, then the second of each, …) until
 * the limit is reached. A type with fewer results leaves its share unused; nothing is borrowed.
 */
export function shareOf(limit: number, typeCount: number): number {
  return Math.ceil(limit / Math.max(typeCount, 1));
}

export function interleave<T>(lists: readonly (readonly T[])[], limit: number): T[] {
  const share = shareOf(limit, lists.length);
  const out: T[] = [];
  for (let round = 0; round < share && out.length < limit; round += 1) {
    for (const list of lists) {
      if (out.length >= limit) break;
      const item = list[round];
      if (item !== undefined) out.push(item);
    }
  }
  return out;
}
