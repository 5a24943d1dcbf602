/** A per-client budget of the server's time spent on calls, so one client cannot starve the rest. */
import { ServerConfigError, WireError } from "../core/errors.js";

/**
 * How much of the server's time one client's calls may take: parsing, checking, running, answering (protocol 7,
 * `[limits.fair-share]`). A client is the authenticated principal, or the address of an anonymous one.
 */
export interface FairnessOptions {
  /** The share of the server's time one client's bodies may take on average, from 0 to 1. Default 0.25. */
  share?: number;
  /** What a client may spend at once, in milliseconds, before its share applies. Default 250. */
  burstMs?: number;
  /** How many clients are remembered (the most recently charged). Default 10,000. */
  maxClients?: number;
}

interface Debt {
  /** Milliseconds of work not yet paid back, as of `at`. */
  ms: number;
  at: number;
}

/**
 * A leaky bucket of work per client: the time each call costs the event loop is added to its client's debt, which
 * drains at `share` milliseconds per millisecond. A client whose debt is over `burstMs` is refused (429) until
 * it drains, before its body is read. One connection sending hostile 1 MiB bodies back to back thus gets at
 * most `share` of the server, where it took nearly all of it (issue 20: legitimate traffic fell from 2,570 to
 * 3-13 calls/s), while a client that stays under its share never sees a refusal. The cost on every call is
 * two clock reads and a map lookup.
 */
export class ClientBudget {
  private readonly debts = new Map<string, Debt>();
  private readonly share: number;
  private readonly burstMs: number;
  private readonly maxClients: number;

  private readonly now: () => number;

  constructor(options: FairnessOptions = {}, now: () => number = () => performance.now()) {
    this.share = options.share ?? 0.25;
    this.burstMs = options.burstMs ?? 250;
    this.maxClients = options.maxClients ?? 10_000;
    this.now = now;
    if (!(this.share > 0 && this.share <= 1))
      throw new ServerConfigError("fairness.share must be above 0 and at most 1");
    if (!(this.burstMs >= 0 && Number.isFinite(this.burstMs))) {
      throw new ServerConfigError("fairness.burstMs must be a number of milliseconds, 0 or more");
    }
    if (!(Number.isSafeInteger(this.maxClients) && this.maxClients > 0)) {
      throw new ServerConfigError("fairness.maxClients must be a positive integer");
    }
  }

  /** The client's debt now, drained since it was last charged. */
  private owed(debt: Debt, now: number): number {
    return Math.max(0, debt.ms - (now - debt.at) * this.share);
  }

  /** Throws a 429 with `Retry-After` when `client` is over its budget; cheap when it is not. */
  admit(client: string): void {
    const debt = this.debts.get(client);
    if (debt === undefined) return;
    const over = this.owed(debt, this.now()) - this.burstMs;
    if (over <= 0) return;
    const seconds = Math.max(1, Math.ceil(over / this.share / 1000));
    throw new WireError("too_many_requests", "Too many requests: slow down", {
      developerMessage: `This client's calls took more than ${Math.round(this.share * 100)}% of the server's time; retry in ${seconds} s.`,
      // The body is not read: the connection cannot carry another request after it.
      headers: { "Retry-After": String(seconds), Connection: "close" },
    });
  }

  /** Adds `ms` of work to `client`'s debt. */
  charge(client: string, ms: number): void {
    const now = this.now();
    const debt = this.debts.get(client);
    if (debt !== undefined) {
      debt.ms = this.owed(debt, now) + ms;
      debt.at = now;
      return;
    }
    this.debts.set(client, { ms, at: now });
    if (this.debts.size > this.maxClients) this.evict(now);
  }

  /**
   * Drops the clients whose debt has drained, then the oldest, down to nine tenths of the bound: a sweep costs
   * O(clients), and it runs at most once per tenth of the bound of new clients.
   */
  private evict(now: number): void {
    for (const [client, debt] of this.debts) if (this.owed(debt, now) === 0) this.debts.delete(client);
    const target = Math.floor(this.maxClients * 0.9);
    for (const client of this.debts.keys()) {
      if (this.debts.size <= target) break;
      this.debts.delete(client);
    }
  }
}
