/** The order of tool versions: numeric by part, so 1.10.0 comes after 1.9.0 (PROTOCOL.md 3.4). */

const parts = (version: string): bigint[] => version.split(".").map((part) => BigInt(part));

/**
 * Orders `x.y.z` versions numerically, whatever their size; negative when `a` comes first. Usable as
 * a sort comparator.
 *
 * @example
 * ["1.10.0", "1.9.0"].sort(compareToolVersions); // ["1.9.0", "1.10.0"]
 */
export function compareToolVersions(a: string, b: string): number {
  const [pa, pb] = [parts(a), parts(b)];
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const [x, y] = [pa[i] ?? 0n, pb[i] ?? 0n];
    if (x !== y) return x < y ? -1 : 1;
  }
  return 0;
}
