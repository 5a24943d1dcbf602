/** The order of tool versions: numeric by part, so 1.10.0 comes after 1.9.0 (protocol section 3.4). */

/** Compares two runs of decimal digits as numbers, in time linear in their length (no BigInt, no overflow). */
function compareDigits(a: string, b: string): number {
  const x = a.replace(/^0+(?=.)/, "");
  const y = b.replace(/^0+(?=.)/, "");
  if (x.length !== y.length) {
    return x.length < y.length ? -1 : 1;
  }
  return x === y ? 0 : x < y ? -1 : 1;
}

/**
 * Orders `x.y.z` versions numerically, whatever their size; negative when `a` comes first. Usable as
 * a sort comparator. Versions the spec allows have at most 9 digits a number, so this costs a few
 * microseconds; longer input is still compared in linear time.
 *
 * @example
 * ["1.10.0", "1.9.0"].sort(compareToolVersions); // ["1.9.0", "1.10.0"]
 */
export function compareToolVersions(a: string, b: string): number {
  const [pa, pb] = [a.split("."), b.split(".")];
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const order = compareDigits(pa[i] ?? "0", pb[i] ?? "0");
    if (order !== 0) {
      return order;
    }
  }
  return 0;
}
