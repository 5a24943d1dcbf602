/** Who the per-client limits (the fairness budget, running calls, open streams and polls) count a request against. */
import { ANONYMOUS_CLIENT_PREFIX } from "./client-budget.js";
import type { Exchange } from "./exchange.js";
import { addressGroup } from "./ip.js";

/**
 * Who the per-client limits (the fairness budget, running calls) count a request against: its principal, or
 * its address (an IPv6 /64) when the principal is `anonymous`, so that with authentication off one caller has its
 * own share.
 */
export function clientOf(principal: string, remoteAddress: string | undefined): string {
  return principal === "anonymous" ? `${ANONYMOUS_CLIENT_PREFIX}${addressGroup(remoteAddress)}` : principal;
}

/** Where a connection keeps the client key of its anonymous requests: its address never changes. */
const ANONYMOUS_CLIENT = Symbol("oxp.anonymousClient");

/** The {@link clientOf} of each request of one pipeline, an anonymous one's worked out as seldom as can be. */
export class ClientKeys {
  /** The client key of the last anonymous request that came without a connection, by its address. */
  private lastAnonymous = { address: undefined as string | undefined, client: clientOf("anonymous", undefined) };

  /** The client key of a request from `principal`. */
  of(exchange: Exchange, principal: string): string {
    return principal === "anonymous" ? this.anonymous(exchange) : principal;
  }

  /**
   * {@link clientOf} an anonymous request, worked out once per connection where the host has one (the same string
   * each time, so the budget's map finds it without hashing a new key per call), else once per run of requests
   * from one address.
   */
  private anonymous(exchange: Exchange): string {
    const connection = exchange.connection as { [ANONYMOUS_CLIENT]?: string } | undefined;
    if (connection !== undefined) {
      connection[ANONYMOUS_CLIENT] ??= clientOf("anonymous", exchange.remoteAddress);
      return connection[ANONYMOUS_CLIENT];
    }
    const address = exchange.remoteAddress;
    if (address !== this.lastAnonymous.address) {
      this.lastAnonymous = { address, client: clientOf("anonymous", address) };
    }
    return this.lastAnonymous.client;
  }
}
