/** IP address checks that every runtime can run (no `node:net`): the Host check, the fair-share client key and connection groups use them. */

const IPV4_PART = "(?:25[0-5]|2[0-4]\\d|1\\d\\d|[1-9]\\d|\\d)";
const IPV4 = new RegExp(`^${IPV4_PART}(?:\\.${IPV4_PART}){3}$`);

/** True for a dotted-quad IPv4 address, with node:net's `isIPv4` rules (no leading zeros). */
export function isIPv4(text: string): boolean {
  return IPV4.test(text);
}

/** True for an IPv6 address as text, a zone id (`%eth0`) allowed, as node:net's `isIPv6` takes it. */
export function isIPv6(text: string): boolean {
  if (!text.includes(":")) {
    return false;
  }
  const zone = text.indexOf("%");
  const bare = zone === -1 ? text : text.slice(0, zone);
  if (zone !== -1 && !/^%[0-9A-Za-z._~-]+$/.test(text.slice(zone))) {
    return false;
  }
  // The WHATWG URL parser implements RFC 4291's text forms exactly; a bracketed host parses only if it is one.
  return /^[0-9A-Fa-f:.]+$/.test(bare) && URL.canParse(`http://[${bare}]/`);
}

/**
 * The key per-client limits count an address under: an IPv4 address as it is, the IPv4 inside an IPv4-mapped
 * IPv6 one, or the /64 prefix of any other IPv6 address (one subscriber usually holds a whole /64, and could
 * otherwise take a fresh address per request).
 */
export function addressGroup(address: string | undefined): string {
  if (address === undefined) {
    return "";
  }
  // An IPv4 address has no colon: it is its own group, with no regular expression run (this runs on every call).
  if (!address.includes(":")) {
    return address;
  }
  const mapped = /^::ffff:(\d+\.\d+\.\d+\.\d+)$/i.exec(address);
  if (mapped) {
    return mapped[1] as string;
  }
  if (!isIPv6(address)) {
    return address;
  }
  const bare = address.replace(/%.*$/, "").toLowerCase();
  const [head = "", tail] = bare.split("::");
  const left = head === "" ? [] : head.split(":");
  const right = tail === undefined || tail === "" ? [] : tail.split(":");
  const groups = [...left, ...Array<string>(Math.max(0, 8 - left.length - right.length)).fill("0"), ...right];
  return `${groups
    .slice(0, 4)
    .map((group) => group.replace(/^0+(?=.)/, ""))
    .join(":")}::/64`;
}

/** True for an address of this machine's loopback interface (127.0.0.0/8, ::1, or IPv4-mapped 127.x). */
export function isLoopback(address: string | undefined): boolean {
  return (
    address !== undefined && (address.startsWith("127.") || address === "::1" || address.startsWith("::ffff:127."))
  );
}
