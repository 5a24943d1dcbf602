/** DNS-rebinding protection: which `Host` names a request may carry (docs/protocol.md 7, `[limits.allowed-hosts]`). */
import { ServerConfigError } from "../core/errors.js";
import { isIPv4, isIPv6, isLoopback } from "./ip.js";

export { isLoopback };

/**
 * The `Host` names a server answers to: names such as `tools.example.com`, `.example.com` for a domain
 * and all its subdomains, or `"any"` for no check.
 */
export type AllowedHosts = readonly string[] | "any";

/**
 * True when a request's `Host` names this server. An absolute-form target's authority is not looked at:
 * browsers never send one to a server, so a rebinding page cannot, and the server builds nothing from it.
 */
export type HostCheck = (arrival: HostArrival) => boolean;

/** What the Host check reads of a request. */
export interface HostArrival {
  /** The request's `Host` (undefined when it carries none). */
  readonly host: string | undefined;
  /** The address the request arrived on, when the host knows it (node:http does; a fetch host may not). */
  readonly localAddress: string | undefined;
  /** The client's address, standing in for the local one when that is unknown: a loopback client reached a loopback server. */
  readonly remoteAddress: string | undefined;
  /** An object living as long as the connection, where the check keeps the Host it accepted; undefined when none. */
  readonly connection: object | undefined;
}

const NAME = /^\.?[a-z0-9_-]+(?:\.[a-z0-9_-]+)*\.?$/i;

/**
 * The check of the `allowedHosts` option, or undefined when there is none to make (`"any"`).
 *
 * A DNS-rebinding page reaches the server under a name of the attacker's, and its browser sends that
 * name as `Host`. So names that cannot be rebound are always accepted: IP addresses (no DNS involved),
 * `localhost` and `*.localhost` (browsers resolve them to loopback themselves), and `publicUrl`'s host.
 * Without a list, only requests that arrive on a loopback address are checked: a server bound there is
 * a developer's or a sidecar's, which a page the user opens could otherwise call; one bound elsewhere
 * usually sits behind a proxy whose names it cannot know. With a list, every request is checked.
 */
export function createHostCheck(
  allowedHosts: AllowedHosts | undefined,
  publicUrl: string | undefined,
): HostCheck | undefined {
  if (allowedHosts === "any") {
    return undefined;
  }
  if (allowedHosts !== undefined && !Array.isArray(allowedHosts)) {
    throw new ServerConfigError('allowedHosts must be a list of host names or "any"');
  }
  const names = new Set<string>();
  const domains: string[] = [];
  for (const entry of allowedHosts ?? []) {
    if (typeof entry !== "string" || !NAME.test(entry)) {
      throw new ServerConfigError(
        `allowedHosts takes host names such as 'tools.example.com', or '.example.com' for a domain and its subdomains, without scheme or port; got '${String(entry).slice(0, 64)}'`,
      );
    }
    const name = entry.toLowerCase().replace(/\.$/, "");
    if (name.startsWith(".")) {
      domains.push(name);
    } else {
      names.add(name);
    }
  }
  // A publicUrl that is not an absolute URL names no host to add.
  const publicHost = publicUrl === undefined || !URL.canParse(publicUrl) ? undefined : new URL(publicUrl).hostname;
  if (publicHost) {
    names.add(publicHost.toLowerCase());
  }
  const everyRequest = allowedHosts !== undefined;

  const nameAllowed = (name: string): boolean => {
    if (isIPv4(name) || name === "localhost" || name.endsWith(".localhost") || names.has(name)) {
      return true;
    }
    for (const domain of domains) {
      if (name.endsWith(domain) || name === domain.slice(1)) {
        return true;
      }
    }
    return false;
  };

  // The Host this check last accepted on a socket: a keep-alive connection sends the same one each time,
  // judged once. A symbol per check, as two apps on one server may allow different names.
  const accepted = Symbol("oxp.acceptedHost");
  return ({ host, localAddress, remoteAddress, connection }) => {
    const remembered = connection as { [accepted]?: string } | undefined;
    // HTTP/1.0 may omit Host (1.1 without one is refused before this): no name, nothing to rebind.
    if (host === undefined || host === remembered?.[accepted]) {
      return true;
    }
    if (!everyRequest && !isLoopback(localAddress ?? remoteAddress)) {
      return true;
    }
    if (!authorityAllowed(host, nameAllowed)) {
      return false;
    }
    if (remembered) {
      remembered[accepted] = host;
    }
    return true;
  };
}

/** True when `authority` is `name[:port]` (or `[IPv6][:port]`) and its name is allowed. */
function authorityAllowed(authority: string, nameAllowed: (name: string) => boolean): boolean {
  if (authority.charCodeAt(0) === 91 /* [ */) {
    const end = authority.indexOf("]");
    return end > 0 && isIPv6(authority.slice(1, end)) && /^(?::\d*)?$/.test(authority.slice(end + 1));
  }
  const colon = authority.indexOf(":");
  if (colon !== -1 && !/^\d*$/.test(authority.slice(colon + 1))) {
    return false;
  }
  const name = (colon === -1 ? authority : authority.slice(0, colon)).toLowerCase();
  return nameAllowed(name.endsWith(".") ? name.slice(0, -1) : name);
}
