/** A per-client budget of the server's time spent on calls, so one client cannot starve the rest. */
import { ServerConfigError, WireError } from "../core/errors.js";

/**
 * How much of the server's time one client's calls may take: parsing, checking, running, answering (protocol 7,
 * `[limits.fair-share]`). A client is the authenticated principal, or the address of an anonymous one; anonymous
 * clients of costly calls also share one budget, so that spreading costly calls over many addresses buys no more
 * than one address gets.
 */
export interface FairnessOptions {
  /** The share of the server's time one client's bodies may take on average, from 0 to 1. Default 0.25. */
  share?: number;
  /** What a client may spend at once, in milliseconds, before its share applies. Default 250. */
  burstMs?: number;
  /**
   * A client is held to its share only while its calls cost at least this much each on average, in milliseconds:
   * a client of many cheap calls (an agent platform, a load generator) is load, not an attack on the others, and
   * is left to the connection limits. Default 1.
   */
  costlyCallMs?: number;
  /** How many clients are remembered (the most recently charged). Default 10,000. */
  maxClients?: number;
  /**
   * The share of the server's time that all anonymous clients of costly calls may take together, from 0 to 1, beside
   * each one's own `share`. Default: `share`, so that eight addresses get what one gets.
   */
  anonymousShare?: number;
}

interface Debt {
  /** What its calls cost each, as a moving average of the work charged between two admitted calls. */
  perCall: number;
  /** Work charged since its last admitted call. */
  sinceAdmit: number;
  /** Milliseconds of work not yet paid back, as of `at`. */
  ms: number;
  at: number;
}

/** How recently another client must have been served for a client to be held to its share, in milliseconds. */
const OTHERS_ACTIVE_MS = 1_000;

/** How an anonymous client's key begins (`clientOf` in client-key.ts makes it): the pool tells them by it. */
export const ANONYMOUS_CLIENT_PREFIX = "address:";

/** The most recent client seen, and the one before it (another): whether clients other than one are being served. */
class RecentClients {
  private latest: { client: string; at: number } | undefined;
  private previous: { client: string; at: number } | undefined;

  saw(client: string, at: number): void {
    if (this.latest?.client === client) {
      this.latest.at = at;
    } else {
      this.previous = this.latest;
      this.latest = { client, at };
    }
  }

  /** Whether a client other than `client` was seen within the last {@link OTHERS_ACTIVE_MS}. */
  othersActive(client: string, now: number): boolean {
    const other = this.latest?.client === client ? this.previous : this.latest;
    return other !== undefined && now - other.at < OTHERS_ACTIVE_MS;
  }
}

/**
 * A leaky bucket of work per client: the time each call costs the event loop is added to its client's debt, which
 * drains at `share` milliseconds per millisecond. A client whose debt is over `burstMs` while other clients are
 * being served (one was, within the last second) is refused (429) until it drains, before its body is read. One
 * connection sending hostile 1 MiB bodies back to back thus gets at most `share` of the server while others call,
 * where it took nearly all of it (issue 20); a client alone on the server
 * may use all of it, and a client that stays under its share never sees a refusal. Debt is capped at a second's
 * share past the burst, so a client that had the server to itself waits at most a second once others arrive. The
 * cost on every call is two clock reads and a map lookup.
 *
 * Anonymous clients are told apart by address, and addresses are cheap to have many of: the work of anonymous
 * clients of costly calls is also charged to one shared bucket (`anonymousShare`), and such a client is refused
 * while that bucket is over its burst and another client outside it (a principal, or an anonymous client of cheap
 * calls) is being served. A client of cheap calls is never refused, by either bucket.
 */
export class ClientBudget {
  private readonly debts = new Map<string, Debt>();
  private readonly share: number;
  private readonly burstMs: number;
  private readonly maxClients: number;
  private readonly costlyCallMs: number;
  /** The most debt a client carries: a second's share past the burst, so no refusal asks for more than a second. */
  private readonly maxDebt: number;

  private readonly now: () => number;
  /** The clients charged: enough to tell whether others are calling. */
  private readonly charged = new RecentClients();
  /** The bucket anonymous clients of costly calls share. */
  private readonly pool: Debt = { perCall: 0, sinceAdmit: 0, ms: 0, at: 0 };
  private readonly poolShare: number;
  private readonly poolMaxDebt: number;
  /**
   * The clients charged outside the pool: the pool is held to its share only while a client outside it, other than
   * the one asking, is served. A client moves between the two as its calls grow cheap or costly (on a busy machine
   * every call costs more), and its own cheap calls are not others.
   */
  private readonly outside = new RecentClients();

  constructor(options: FairnessOptions = {}, now: () => number = () => performance.now()) {
    this.share = options.share ?? 0.25;
    this.burstMs = options.burstMs ?? 250;
    this.maxClients = options.maxClients ?? 10_000;
    this.costlyCallMs = options.costlyCallMs ?? 1;
    if (!(this.costlyCallMs >= 0 && Number.isFinite(this.costlyCallMs))) {
      throw new ServerConfigError("fairness.costlyCallMs must be a number of milliseconds, 0 or more");
    }
    this.maxDebt = this.burstMs + 1_000 * this.share;
    this.now = now;
    if (!(this.share > 0 && this.share <= 1)) {
      throw new ServerConfigError("fairness.share must be above 0 and at most 1");
    }
    this.poolShare = options.anonymousShare ?? this.share;
    if (!(this.poolShare > 0 && this.poolShare <= 1)) {
      throw new ServerConfigError("fairness.anonymousShare must be above 0 and at most 1");
    }
    this.poolMaxDebt = this.burstMs + 1_000 * this.poolShare;
    if (!(this.burstMs >= 0 && Number.isFinite(this.burstMs))) {
      throw new ServerConfigError("fairness.burstMs must be a number of milliseconds, 0 or more");
    }
    if (!(Number.isSafeInteger(this.maxClients) && this.maxClients > 0)) {
      throw new ServerConfigError("fairness.maxClients must be a positive integer");
    }
  }

  /** The client's debt now, drained since it was last charged (at `share`: the pool's own share drains it). */
  private owed(debt: Debt, now: number, share = this.share): number {
    return Math.max(0, debt.ms - (now - debt.at) * share);
  }

  /** Throws a 429 with `Retry-After` when `client` is over its budget while others call; cheap when it is not. */
  admit(client: string): void {
    const debt = this.debts.get(client);
    if (debt === undefined) {
      return;
    }
    // Each admitted call closes the last one's account: what was charged since is about one call's cost.
    debt.perCall = debt.perCall * 0.8 + debt.sinceAdmit * 0.2;
    debt.sinceAdmit = 0;
    // A client of cheap calls is never held back: the clock is not even read for it.
    if (debt.perCall < this.costlyCallMs) {
      return;
    }
    const now = this.now();
    const over = this.owed(debt, now) - this.burstMs;
    if (over > 0 && this.charged.othersActive(client, now)) {
      throw tooMany(over / this.share, `This client's calls took more than ${Math.round(this.share * 100)}%`);
    }
    if (!client.startsWith(ANONYMOUS_CLIENT_PREFIX)) {
      return;
    }
    const poolOver = this.owed(this.pool, now, this.poolShare) - this.burstMs;
    if (poolOver > 0 && this.outside.othersActive(client, now)) {
      throw tooMany(
        poolOver / this.poolShare,
        `Anonymous clients of costly calls took more than ${Math.round(this.poolShare * 100)}%, together,`,
      );
    }
  }

  /** Adds `ms` of work to `client`'s debt; `now` is the clock's reading at the work's end, when the caller has it. */
  charge(client: string, ms: number, now: number = this.now()): void {
    this.charged.saw(client, now);
    let debt = this.debts.get(client);
    if (debt !== undefined) {
      debt.ms = Math.min(this.owed(debt, now) + ms, this.maxDebt);
      debt.at = now;
      debt.sinceAdmit += ms;
    } else {
      debt = { ms: Math.min(ms, this.maxDebt), at: now, perCall: 0, sinceAdmit: ms };
      this.debts.set(client, debt);
      if (this.debts.size > this.maxClients) {
        this.evict(now);
      }
    }
    // An anonymous client whose calls are costly, or whose current call already is, spends the pool's time too.
    if (
      client.startsWith(ANONYMOUS_CLIENT_PREFIX) &&
      (debt.perCall >= this.costlyCallMs || debt.sinceAdmit >= this.costlyCallMs)
    ) {
      const pool = this.pool;
      pool.ms = Math.min(this.owed(pool, now, this.poolShare) + ms, this.poolMaxDebt);
      pool.at = now;
    } else {
      this.outside.saw(client, now);
    }
  }

  /**
   * Drops the clients whose debt has drained, then the oldest, down to nine tenths of the bound: a sweep costs
   * O(clients), and it runs at most once per tenth of the bound of new clients.
   */
  private evict(now: number): void {
    for (const [client, debt] of this.debts) {
      if (this.owed(debt, now) === 0) {
        this.debts.delete(client);
      }
    }
    const target = Math.floor(this.maxClients * 0.9);
    for (const client of this.debts.keys()) {
      if (this.debts.size <= target) {
        break;
      }
      this.debts.delete(client);
    }
  }
}

/** The 429 of a client over a budget, `ms` of work past it: `Retry-After` in whole seconds, at least 1. */
function tooMany(ms: number, whose: string): WireError {
  const seconds = Math.max(1, Math.ceil(ms / 1000));
  return new WireError("too_many_requests", "Too many requests: slow down", {
    developerMessage: `${whose} of the server's time; retry in ${seconds} s.`,
    // The body is not read: the connection cannot carry another request after it.
    headers: { "Retry-After": String(seconds), Connection: "close" },
  });
}
