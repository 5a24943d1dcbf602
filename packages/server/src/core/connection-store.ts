/**
 * The connections vault's storage (docs/protocol.md 9.7): each user's connections to third-party providers, their
 * tokens sealed (AES-256-GCM) before they reach a store, and the lock that makes a refresh single-flight across every
 * instance sharing the store. {@link MemoryConnectionStore} serves one process; `@otc/postgres` serves many.
 */
import { type Clock, type ClockTimer, systemClock } from "./clock.js";
import { ServerConfigError } from "./errors.js";

/** Where a connection stands. */
export type ConnectionStatus = "pending" | "active" | "auth_required" | "revoked";

/**
 * A connection's tokens as a store keeps them: sealed with AES-256-GCM under the key named by `kid`, bound (as
 * additional data) to the connection's id, owner and provider, so that a sealed value moved to another row does not
 * open. Strings are base64url.
 */
export interface SealedTokens {
  /** The id of the key-encryption key it was sealed with: keys rotate, old ones still open what they sealed. */
  kid: string;
  iv: string;
  data: string;
}

/** One connection as the vault keeps it. Never answered as it is: tokens stay in the server. */
export interface ConnectionRecord {
  /** Made by the server: URL-safe, unguessable. */
  id: string;
  /** Who the server authenticated when the connection was made (docs/protocol.md 5, 9.6). */
  principal: string;
  /** The user it acts for. */
  userId: string;
  /** The provider's id, as tools name it in `requirements.authorization[].id`. */
  provider: string;
  status: ConnectionStatus;
  /** The scopes granted (asked for, while pending). */
  scopes: string[];
  /** A label for people: the provider account's email or name, when the provider tells it. */
  account?: string;
  /** Epoch milliseconds. */
  createdAt: number;
  updatedAt: number;
  /** When the access token expires, epoch milliseconds; absent when the provider gave no expiry. */
  expiresAt?: number;
  /** The tokens, sealed; absent while pending and once revoked. */
  tokens?: SealedTokens;
  /** Bumped by every write: a write that names an older one is refused (another instance wrote first). */
  version: number;
}

/** Thrown by a store at its bounds (per user, in all): the server answers 503 or 409 with what to do. */
export class ConnectionStoreFullError extends Error {
  constructor(
    message: string,
    /** `user`: this user holds the most connections allowed; `total`: the store holds the most it may. */
    readonly bound: "user" | "total",
  ) {
    super(message);
    this.name = "ConnectionStoreFullError";
  }
}

/** Thrown by {@link ConnectionStore.withLock} when another caller held the connection's lock for longer than `timeoutMs`. */
export class ConnectionLockTimeoutError extends Error {
  constructor(
    /** The connection whose lock was not had. */
    readonly connectionId: string,
    readonly timeoutMs: number,
    options?: { cause?: unknown },
  ) {
    super(`The lock of connection ${connectionId} was not free within ${timeoutMs} ms`, options);
    this.name = "ConnectionLockTimeoutError";
  }
}

/** The bounds every store enforces. */
export interface ConnectionStoreBounds {
  /** Connections per (principal, user), any status. Default 50. */
  maxPerUser?: number;
  /** Connections in all. Default 100,000. */
  maxTotal?: number;
}

/** The defaults of {@link ConnectionStoreBounds}. */
export const CONNECTION_STORE_DEFAULTS = { maxPerUser: 50, maxTotal: 100_000 } as const;

/**
 * Where connections are kept. Every method may be called by several instances at once; only
 * {@link ConnectionStore.withLock} orders them.
 */
export interface ConnectionStore {
  /** The connections of (principal, user), newest first. */
  list(principal: string, userId: string): Promise<ConnectionRecord[]>;
  /** One connection by id, whoever owns it (the caller checks the owner); undefined when there is none. */
  get(id: string): Promise<ConnectionRecord | undefined>;
  /** Adds a connection; throws {@link ConnectionStoreFullError} past the bounds. `version` is taken as given. */
  insert(record: ConnectionRecord): Promise<void>;
  /**
   * Replaces a connection if its stored `version` is `expectedVersion` (the record carries the next one): true when
   * it was written, false when another write came first or the connection is gone.
   */
  update(record: ConnectionRecord, expectedVersion: number): Promise<boolean>;
  /** Removes a connection; nothing happens for an unknown id. */
  delete(id: string): Promise<void>;
  /**
   * Runs `work` while holding the connection's lock, which every instance sharing the store respects: a second
   * caller waits for the first to finish, then runs its own `work` (which re-reads the connection and usually finds
   * the refresh done). Resolves with what `work` resolves with; a caller that waits longer than `timeoutMs` for a lock
   * another caller holds gives up with a {@link ConnectionLockTimeoutError} rather than wait for ever.
   */
  withLock<T>(id: string, timeoutMs: number, work: () => Promise<T>): Promise<T>;
}

/** A positive whole number from an option, or its default. */
function bound(value: number | undefined, fallback: number, name: string): number {
  const chosen = value ?? fallback;
  if (!(Number.isSafeInteger(chosen) && chosen > 0)) {
    throw new ServerConfigError(`${name} must be a positive whole number`);
  }
  return chosen;
}

/** The checked bounds of a store's options. */
export function connectionStoreBounds(options: ConnectionStoreBounds = {}): Required<ConnectionStoreBounds> {
  return {
    maxPerUser: bound(options.maxPerUser, CONNECTION_STORE_DEFAULTS.maxPerUser, "maxPerUser"),
    maxTotal: bound(options.maxTotal, CONNECTION_STORE_DEFAULTS.maxTotal, "maxTotal"),
  };
}

const ownerKey = (principal: string, userId: string) => JSON.stringify([principal, userId]);

/** The options of {@link MemoryConnectionStore}. */
export interface MemoryConnectionStoreOptions extends ConnectionStoreBounds {
  /** The clock a lock's time limit follows. Default the system clock; a server's own vault passes the server's. */
  clock?: Clock;
}

/** Connections in this process's memory: for one instance (tests, a single server). Lost when the process ends. */
export class MemoryConnectionStore implements ConnectionStore {
  private readonly records = new Map<string, ConnectionRecord>();
  private readonly byOwner = new Map<string, Set<string>>();
  /** Per id, the turn of the last caller to queue for the lock: it settles once that caller lets go. */
  private readonly tails = new Map<string, Promise<void>>();
  private readonly bounds: Required<ConnectionStoreBounds>;
  private readonly clock: Clock;
  private waiting = 0;

  constructor(options: MemoryConnectionStoreOptions = {}) {
    this.bounds = connectionStoreBounds(options);
    this.clock = options.clock ?? systemClock;
  }

  /** Callers waiting for a lock another caller holds (a gauge for metrics, as the SQL stores have). */
  get waitingForLock(): number {
    return this.waiting;
  }

  async list(principal: string, userId: string): Promise<ConnectionRecord[]> {
    const ids = this.byOwner.get(ownerKey(principal, userId)) ?? new Set<string>();
    return [...ids]
      .map((id) => this.records.get(id))
      .filter((record): record is ConnectionRecord => record !== undefined)
      .sort((a, b) => b.createdAt - a.createdAt || (a.id < b.id ? -1 : 1))
      .map(copyOf);
  }

  async get(id: string): Promise<ConnectionRecord | undefined> {
    const record = this.records.get(id);
    return record && copyOf(record);
  }

  async insert(record: ConnectionRecord): Promise<void> {
    if (this.records.has(record.id)) {
      throw new Error(`connection ${record.id} exists already`);
    }
    const key = ownerKey(record.principal, record.userId);
    const owned = this.byOwner.get(key) ?? new Set<string>();
    if (owned.size >= this.bounds.maxPerUser) {
      throw new ConnectionStoreFullError("This user holds the most connections allowed", "user");
    }
    if (this.records.size >= this.bounds.maxTotal) {
      throw new ConnectionStoreFullError("The vault holds the most connections it may", "total");
    }
    this.records.set(record.id, copyOf(record));
    owned.add(record.id);
    this.byOwner.set(key, owned);
  }

  async update(record: ConnectionRecord, expectedVersion: number): Promise<boolean> {
    const stored = this.records.get(record.id);
    if (!stored || stored.version !== expectedVersion) {
      return false;
    }
    this.records.set(record.id, copyOf(record));
    return true;
  }

  async delete(id: string): Promise<void> {
    const stored = this.records.get(id);
    if (!stored) {
      return;
    }
    this.records.delete(id);
    const key = ownerKey(stored.principal, stored.userId);
    const owned = this.byOwner.get(key);
    owned?.delete(id);
    if (owned?.size === 0) {
      this.byOwner.delete(key);
    }
  }

  async withLock<T>(id: string, timeoutMs: number, work: () => Promise<T>): Promise<T> {
    if (!(Number.isFinite(timeoutMs) && timeoutMs > 0)) {
      throw new TypeError("timeoutMs must be a positive number of milliseconds");
    }
    // One process: a queue of promises per id is the lock. A caller that gives up keeps its place until the one
    // before it lets go, then passes the turn on at once, so the queue never breaks.
    const previous = this.tails.get(id);
    let release!: () => void;
    const mine = new Promise<void>((resolve) => {
      release = resolve;
    });
    const tail = (previous ?? Promise.resolve()).then(() => mine);
    this.tails.set(id, tail);
    void tail.then(() => {
      if (this.tails.get(id) === tail) {
        this.tails.delete(id);
      }
    });
    if (previous) {
      await this.turnWithin(id, previous, timeoutMs, release);
    }
    try {
      return await work();
    } finally {
      release();
    }
  }

  /** Waits for `previous` to let go, on the store's clock for at most `timeoutMs`; gives the turn on if it does not. */
  private async turnWithin(id: string, previous: Promise<void>, timeoutMs: number, release: () => void): Promise<void> {
    this.waiting++;
    let timer: ClockTimer | undefined;
    try {
      const gotIt = await new Promise<boolean>((resolve) => {
        timer = this.clock.setTimeout(() => resolve(false), timeoutMs);
        void previous.then(() => resolve(true));
      });
      if (!gotIt) {
        void previous.then(release);
        throw new ConnectionLockTimeoutError(id, timeoutMs);
      }
    } finally {
      this.clock.clearTimeout(timer);
      this.waiting--;
    }
  }
}

/**
 * A record's copy, so that nobody holding one changes what the store keeps: its members are strings and numbers but
 * the scopes and the sealed tokens, copied one level down. `structuredClone` did the same at 4 us a record, an eighth of
 * a vault call's server CPU on the native adapter (bench/results/notes.md, issue 32); this takes a tenth of a
 * microsecond. The store contract's copy test (packages/postgres/test) holds it.
 */
function copyOf(record: ConnectionRecord): ConnectionRecord {
  const copy = { ...record, scopes: [...record.scopes] };
  if (record.tokens !== undefined) {
    copy.tokens = { ...record.tokens };
  }
  return copy;
}
