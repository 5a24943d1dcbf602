/** Where authorization providers keep their pending and decided challenges: the interface, and a bounded in-memory store. */
import type { ChallengeStatus, TokenOwner } from "./authorization.js";
import { ServerConfigError } from "./errors.js";

/** A challenge as a {@link ChallengeStore} holds it. */
export interface StoredChallenge {
  /** Whose token the challenge obtains. */
  owner: TokenOwner;
  /** The scopes asked for. */
  scopes: readonly string[];
  status: ChallengeStatus;
  /** Epoch milliseconds after which the challenge is gone, pending or decided. */
  expiresAt: number;
  /** What the provider keeps with the challenge (an anti-CSRF token, say): strings only, so any store can hold it. */
  data: Readonly<Record<string, string>>;
}

/** What a provider gives {@link ChallengeStore.add}: the store sets the status (`pending`) and the expiry. */
export interface NewChallenge {
  owner: TokenOwner;
  scopes: readonly string[];
  data?: Readonly<Record<string, string>>;
}

/**
 * Challenges by id, for an authorization provider. A store shared by several server instances (e.g.
 * Redis) lets a challenge started on one be checked and completed through another. Every store is
 * bounded: a TTL for every challenge, a cap on each owner's pending ones, a cap on each principal's
 * (pending or decided, over all its user ids), a cap on the total.
 */
export interface ChallengeStore {
  /**
   * Adds a pending challenge under `id` (replacing one with that id). When its owner already has the
   * most pending challenges allowed, the owner's oldest pending ones are dropped to make room; when its
   * principal already holds the most challenges allowed, that principal's oldest ones (pending or
   * decided) are. Throws a {@link ChallengeStoreFullError} when the store holds its maximum and none
   * of them is dropped to make room.
   */
  add(id: string, challenge: NewChallenge): Promise<StoredChallenge>;
  /** The challenge, unless it is unknown or expired. */
  get(id: string): Promise<StoredChallenge | undefined>;
  /**
   * Decides a pending challenge; the first decision stands. Returns the status the challenge has
   * afterwards (the earlier decision's when there was one), or undefined when it is unknown or expired.
   */
  decide(id: string, status: "completed" | "failed"): Promise<ChallengeStatus | undefined>;
  /** How many challenges are held, when the store can tell cheaply (an in-process one can). */
  readonly size?: number;
}

/** Thrown by {@link ChallengeStore.add} when the store is full; a provider answers 503 with `Retry-After`. */
export class ChallengeStoreFullError extends Error {
  override name = "ChallengeStoreFullError";
  constructor(
    /** When the oldest held challenge expires, in milliseconds from now: a retry may find room then. */
    readonly retryAfterMs: number,
    /** The store's maximum, for a developer message. */
    readonly maxChallenges: number,
  ) {
    super("The challenge store is full");
  }
}

/** Options of {@link MemoryChallengeStore} (and the bounds a shared store should offer). */
export interface ChallengeStoreOptions {
  /** How long a challenge lives, pending or decided, in milliseconds. Default 10 minutes. */
  ttlMs?: number;
  /** The most pending challenges one owner (principal and user) has; adding one more drops that owner's oldest. Default 5. */
  maxPendingPerOwner?: number;
  /**
   * The most challenges one principal holds, pending or decided, over all the user ids it sends;
   * adding one more drops that principal's oldest. Below `maxChallenges`, it keeps one principal from
   * filling the store and so from denying every other principal a challenge. Default 1,000.
   */
  maxChallengesPerPrincipal?: number;
  /** The most challenges held in total, decided ones included; beyond it `add` throws. Default 10,000. */
  maxChallenges?: number;
}

/** Options of {@link MemoryChallengeStore}. */
export interface MemoryChallengeStoreOptions extends ChallengeStoreOptions {
  /** The clock, in epoch milliseconds; tests replace it. Default `Date.now`. */
  now?: () => number;
}

/** The bounds every challenge store defaults to. */
export const CHALLENGE_STORE_DEFAULTS: Readonly<Required<ChallengeStoreOptions>> = {
  ttlMs: 10 * 60 * 1000,
  maxPendingPerOwner: 5,
  maxChallengesPerPrincipal: 1_000,
  maxChallenges: 10_000,
};

/** Checks a store's bounds and fills in the defaults; `owner` names the store in the error. */
export function challengeStoreBounds(owner: string, options: ChallengeStoreOptions): Required<ChallengeStoreOptions> {
  const bounds = { ...CHALLENGE_STORE_DEFAULTS };
  for (const name of ["ttlMs", "maxPendingPerOwner", "maxChallengesPerPrincipal", "maxChallenges"] as const) {
    const value = options[name] ?? bounds[name];
    if (!Number.isSafeInteger(value) || value < 1) {
      throw new ServerConfigError(`${owner}: ${name} must be a positive integer, got ${value}`);
    }
    bounds[name] = value;
  }
  return bounds;
}

/** The key of an owner's pending set: JSON, so no principal or user id can collide with another pair. */
export const challengeOwnerKey = (owner: TokenOwner) => JSON.stringify([owner.principal, owner.userId]);

interface HeldChallenge extends StoredChallenge {
  ownerKey: string;
}

/**
 * An in-process challenge store. Every challenge has the same TTL, so insertion order is expiry
 * order: expired challenges are always at the head of the map and each is dropped once, making every
 * operation amortized O(1) whatever the number held.
 */
export class MemoryChallengeStore implements ChallengeStore {
  private readonly challenges = new Map<string, HeldChallenge>();
  /** Pending challenge ids by owner, oldest first. */
  private readonly pendingByOwner = new Map<string, Set<string>>();
  /** Every held challenge id (pending or decided) by principal, oldest first. */
  private readonly byPrincipal = new Map<string, Set<string>>();
  private readonly bounds: Required<ChallengeStoreOptions>;
  private readonly now: () => number;

  constructor(options: MemoryChallengeStoreOptions = {}) {
    this.bounds = challengeStoreBounds("MemoryChallengeStore", options);
    this.now = options.now ?? Date.now;
  }

  get size(): number {
    this.prune(this.now());
    return this.challenges.size;
  }

  async add(id: string, challenge: NewChallenge): Promise<StoredChallenge> {
    const now = this.now();
    this.prune(now);
    // A reused id would keep its old place in the Map and break the expiry order (the Redis store drops it first too).
    this.drop(id);
    const ownerKey = challengeOwnerKey(challenge.owner);
    const dropped = this.makeRoom(ownerKey, challenge.owner.principal);
    // The owner's and principal's oldest ones go anyway, so they make room before the total is checked:
    // a full store still takes a challenge from one at its cap, and only many principals can fill it.
    if (this.challenges.size - dropped.size >= this.bounds.maxChallenges) {
      const oldest = this.challenges.values().next().value;
      throw new ChallengeStoreFullError((oldest?.expiresAt ?? now) - now, this.bounds.maxChallenges);
    }
    for (const old of dropped) {
      this.drop(old);
    }
    const held: HeldChallenge = {
      owner: { principal: challenge.owner.principal, userId: challenge.owner.userId },
      scopes: [...challenge.scopes],
      status: "pending",
      expiresAt: now + this.bounds.ttlMs,
      data: { ...challenge.data },
      ownerKey,
    };
    this.challenges.set(id, held);
    const pending = this.pendingByOwner.get(ownerKey) ?? new Set<string>();
    pending.add(id);
    this.pendingByOwner.set(ownerKey, pending);
    const theirs = this.byPrincipal.get(held.owner.principal) ?? new Set<string>();
    theirs.add(id);
    this.byPrincipal.set(held.owner.principal, theirs);
    return this.copy(held);
  }

  /**
   * The ids a new challenge of this owner drops: the owner's oldest pending ones past its cap, then
   * the principal's oldest (pending or decided) past its own. Both sets are oldest first, so this
   * reads only as many ids as go, plus at most the owner's few.
   */
  private makeRoom(ownerKey: string, principal: string): Set<string> {
    const dropped = new Set<string>();
    const mine = this.pendingByOwner.get(ownerKey);
    if (mine) {
      let excess = mine.size - this.bounds.maxPendingPerOwner + 1;
      for (const old of mine) {
        if (excess-- <= 0) {
          break;
        }
        dropped.add(old);
      }
    }
    const theirs = this.byPrincipal.get(principal);
    if (theirs) {
      // The owner's dropped ones are the principal's too.
      let excess = theirs.size - dropped.size - this.bounds.maxChallengesPerPrincipal + 1;
      for (const old of theirs) {
        if (excess <= 0) {
          break;
        }
        if (dropped.has(old)) {
          continue;
        }
        dropped.add(old);
        excess--;
      }
    }
    return dropped;
  }

  async get(id: string): Promise<StoredChallenge | undefined> {
    const held = this.live(id);
    return held && this.copy(held);
  }

  async decide(id: string, status: "completed" | "failed"): Promise<ChallengeStatus | undefined> {
    const held = this.live(id);
    if (!held) {
      return undefined;
    }
    if (held.status !== "pending") {
      return held.status;
    }
    held.status = status;
    this.unpend(id, held);
    return status;
  }

  /** A copy, so a caller changing what it got cannot change what is held. */
  private copy(held: HeldChallenge): StoredChallenge {
    return {
      owner: { ...held.owner },
      scopes: [...held.scopes],
      status: held.status,
      expiresAt: held.expiresAt,
      data: { ...held.data },
    };
  }

  private live(id: string): HeldChallenge | undefined {
    const now = this.now();
    this.prune(now);
    const held = this.challenges.get(id);
    return held && held.expiresAt > now ? held : undefined;
  }

  /** Drops expired challenges from the head: each challenge is dropped once, so this is amortized O(1). */
  private prune(now: number): void {
    for (const [id, held] of this.challenges) {
      if (held.expiresAt > now) {
        return;
      }
      this.drop(id);
    }
  }

  private drop(id: string): void {
    const held = this.challenges.get(id);
    if (!held) {
      return;
    }
    this.challenges.delete(id);
    this.unpend(id, held);
    const theirs = this.byPrincipal.get(held.owner.principal);
    if (!theirs) {
      return;
    }
    theirs.delete(id);
    if (theirs.size === 0) {
      this.byPrincipal.delete(held.owner.principal);
    }
  }

  private unpend(id: string, held: HeldChallenge): void {
    const pending = this.pendingByOwner.get(held.ownerKey);
    if (!pending) {
      return;
    }
    pending.delete(id);
    if (pending.size === 0) {
      this.pendingByOwner.delete(held.ownerKey);
    }
  }
}
