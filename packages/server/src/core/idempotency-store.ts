/** Where `call_id` idempotency records and the tasks extension's shared state live: the interfaces, and an in-memory store bounded in entries and bytes. */
import type { CallProgress, CallToolResponse } from "@otc/types";
import { type Clock, type ClockTimer, systemClock } from "./clock.js";
import { KeyedListeners } from "./keyed-listeners.js";
import { WriteQueue } from "./write-queue.js";

/** A call_id belongs to the principal that sent it: two principals' equal call_ids are unrelated keys. */
export interface IdempotencyKey {
  /** Who the server authenticated (`anonymous` when authentication is off). */
  principal: string;
  callId: string;
}

/** What a store holds for one key: the call's fingerprint, and its response once finished. */
export interface IdempotencyEntry {
  /** A hash of what makes two calls "the same call" (resolved tool, input, user id). */
  fingerprint: string;
  /** Absent while the first call with this key is still running. */
  response?: CallToolResponse;
  /**
   * True while a run abandoned at its time limit has not settled (its tool ignored the AbortSignal):
   * the key stays held so a retry cannot start a second concurrent run.
   */
  abandoned?: boolean;
  /** The call was cancelled (the tasks extension, docs/protocol.md 9.3): its response says so. */
  cancelled?: boolean;
  /**
   * The response is a retryable failure of an asynchronous call, kept so that its status can be read, but not
   * replayed: a new call with the key runs again, as for OXP 1.0's retryable failures, which are not kept at all.
   */
  rerunnable?: boolean;
  /** A running call's latest progress, as its run recorded it (the tasks extension). */
  progress?: CallProgress;
  /** The number of that progress: the id of its `progress` event. */
  progressSeq?: number;
  /**
   * Until when (epoch milliseconds) the instance running an asynchronous call vouches for it. Past it, the run is
   * taken for dead: its status is a retryable failure, and a new call with the key may claim it.
   */
  leaseUntil?: number;
}

/** A change of a key that another instance may be waiting for (the tasks extension). */
export type TaskEvent = "progress" | "settled" | "cancel";

/** What {@link IdempotencyStore.complete} keeps: the response, and how the call ended. */
export interface CompletedEntry {
  fingerprint: string;
  response: CallToolResponse;
  /** See {@link IdempotencyEntry.cancelled}. */
  cancelled?: boolean;
  /** See {@link IdempotencyEntry.rerunnable}. */
  rerunnable?: boolean;
}

/**
 * Idempotency records by (principal, call_id) (docs/protocol.md 3.7): what the core's idempotency gate needs, all of
 * it required. A store shared by several server instances (e.g. Redis) lets them honour the same keys; `claim` must
 * then be atomic (SET NX), and `waitFor` must hear other instances' writes (e.g. pub/sub).
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for a new call. Returns undefined when the caller now holds the key (it must later
   * `complete`, `abandon` or `release` it), or the entry that already holds it. A `rerunnable` entry holds
   * nothing: the claim replaces it. A claim lapses after
   * `ttlMs`, so a claim of an instance that died does not block the key. Throws an
   * {@link IdempotencyStoreFullError} when the store cannot take the key without dropping records it
   * must keep.
   */
  claim(key: IdempotencyKey, fingerprint: string, ttlMs: number): Promise<IdempotencyEntry | undefined>;
  /**
   * Stores the finished response of a claimed key for `ttlMs`, with how the call ended; a response too large
   * to keep frees the key instead.
   */
  complete(key: IdempotencyKey, entry: CompletedEntry, ttlMs: number): Promise<void>;
  /** Marks a claimed key as held by an abandoned run, for `ttlMs` (renewed while the run goes on). */
  abandon(key: IdempotencyKey, fingerprint: string, ttlMs: number): Promise<void>;
  /**
   * Frees a claimed key without storing anything, so the call may run again. `response`, when given
   * (a retryable failure, which is never kept), goes to the duplicates waiting on the key
   * ({@link waitFor} resolves with it): the run they waited for is theirs too.
   */
  release(key: IdempotencyKey, response?: CallToolResponse): Promise<void>;
  /** The entry that holds `key`, if any. */
  get(key: IdempotencyKey): Promise<IdempotencyEntry | undefined>;
  /**
   * Waits until `key` holds a finished response or is abandoned (resolves with the entry), is released with a
   * response for waiters (resolves with it), is freed or held for another fingerprint, or the lease of its run
   * passed (undefined: the caller may claim it), at most `maxMs` (undefined). Told of each change as it happens
   * (never by polling), so that a duplicate learns the first call's result at once.
   */
  waitFor(key: IdempotencyKey, fingerprint: string, maxMs: number): Promise<IdempotencyEntry | undefined>;
}

/**
 * The tasks extension's shared state (docs/protocol.md 9.3), beside the call_id records it reads: what the core's
 * task board needs so that a call run on one instance can be read, followed and cancelled through any other. All of
 * it required: a store for one process implements it in memory ({@link MemoryIdempotencyStore} does).
 */
export interface TaskStore {
  /**
   * Records a running call's progress (`update.seq` numbers it), if `key` is still held for `fingerprint`.
   * Resolves `false` when it did not keep it (any other answer counts as kept): the instance running the call
   * answers only a progress its store kept, so that no instance answers less than another did before.
   */
  progress(
    key: IdempotencyKey,
    fingerprint: string,
    update: { progress: CallProgress; seq: number },
    // biome-ignore lint/suspicious/noConfusingVoidType: a store written when this answered Promise<void> still fits, and counts as keeping every progress.
  ): Promise<boolean | void>;
  /** Vouches for a running asynchronous call for `leaseMs` more (see {@link IdempotencyEntry.leaseUntil}). */
  renew(key: IdempotencyKey, fingerprint: string, leaseMs: number): Promise<void>;
  /** Asks the instance running `key`'s call to cancel it (its watchers see `cancel`). */
  cancel(key: IdempotencyKey): Promise<void>;
  /** Calls `listener` on each change of `key` (from any instance); returns the function that stops it. */
  watch(key: IdempotencyKey, listener: (event: TaskEvent) => void): () => void;
}

/** Whether `store` is also a {@link TaskStore} (all four methods): asked once, when a core is built. */
export function isTaskStore(store: object): store is TaskStore {
  const methods = store as Partial<Record<keyof TaskStore, unknown>>;
  return (
    typeof methods.progress === "function" &&
    typeof methods.renew === "function" &&
    typeof methods.cancel === "function" &&
    typeof methods.watch === "function"
  );
}

/** Thrown by `claim` when a store is full of records it must keep; the server answers 503 with `Retry-After`. */
export class IdempotencyStoreFullError extends Error {
  override name = "IdempotencyStoreFullError";
  constructor(
    /** When a retry may find room, in milliseconds. */
    readonly retryAfterMs: number,
  ) {
    super("The idempotency store is full");
  }
}

/** Options of {@link MemoryIdempotencyStore}. Every bound has a default; see the server README's Security section. */
export interface MemoryIdempotencyStoreOptions {
  /** The most bytes kept, all principals together. Default 64 MiB. */
  maxBytes?: number;
  /** The most records kept, all principals together. Default 100,000. */
  maxEntries?: number;
  /** The most bytes one principal's records take; past it, that principal's oldest finished records go. Default 16 MiB. */
  maxBytesPerPrincipal?: number;
  /** The most records one principal keeps; past it, that principal's oldest finished records go. Default 10,000. */
  maxEntriesPerPrincipal?: number;
  /** A response larger than this (serialized) is returned but not kept, so a replay runs again. Default 1 MiB. */
  maxResponseBytes?: number;
  /**
   * The clock its expiry, leases and waits follow (a core's own store follows the core's). Default {@link systemClock}.
   */
  clock?: Clock;
  /** The time alone, for tests that move it by hand (the timers of waits then stay on `clock`). */
  now?: () => number;
}

const MIB = 1024 * 1024;

const encoder = new TextEncoder();
/** Where {@link utf8ByteLength} encodes, reused: measuring allocates no bytes, and a long string goes through in chunks. */
const scratch = new Uint8Array(48 * 1024);

/**
 * The length of a string in UTF-8 bytes (a lone surrogate counts 3, as the U+FFFD it is written as), without
 * Buffer. Encoding into a reused buffer is native on every runtime, and beat a JavaScript loop over the string
 * 4 to 40 times (on 10 KB responses: as fast as Buffer.byteLength on ASCII).
 */
export function utf8ByteLength(text: string): number {
  let bytes = 0;
  for (let rest = text; ; ) {
    // Stops before a character that does not fit, never inside a surrogate pair.
    const { read, written } = encoder.encodeInto(rest, scratch);
    bytes += written;
    if (read >= rest.length) {
      return bytes;
    }
    rest = rest.slice(read);
  }
}
/** What a record costs besides its strings: the Map slots, the record object, the numbers. */
const RECORD_OVERHEAD_BYTES = 256;

interface StoredRecord {
  principal: string;
  fingerprint: string;
  /** The response, serialized: its size is then known exactly, and a replay hands out a fresh copy. */
  response?: string;
  abandoned?: boolean;
  cancelled?: boolean;
  rerunnable?: boolean;
  progress?: CallProgress;
  progressSeq?: number;
  leaseUntil?: number;
  expiresAt: number;
  bytes: number;
  /** Which write made this record: an entry of a {@link WriteQueue} with another number is stale. */
  seq?: number;
}

interface PrincipalUsage {
  bytes: number;
  count: number;
  /** This principal's records, oldest write first. */
  queue: WriteQueue;
}

const recordKey = (key: IdempotencyKey) => `${key.principal}\u0000${key.callId}`;

/**
 * An in-process idempotency store, bounded in records and bytes. Each principal has a quota: going
 * past it drops that principal's own oldest finished records, never another principal's and never a
 * call still running. When the whole store is full of records it must keep, a new key is refused
 * ({@link IdempotencyStoreFullError}) rather than a record dropped early.
 */
export class MemoryIdempotencyStore implements IdempotencyStore, TaskStore {
  private readonly records = new Map<string, StoredRecord>();
  /** Who follows which key (the tasks extension): several servers sharing this store in one process included. */
  private readonly watchers = new KeyedListeners<TaskEvent>();
  /** Who waits for a key's call to end ({@link waitFor}): told of each write of the key, with a released response. */
  private readonly waiters = new KeyedListeners<CallToolResponse | undefined>();
  private readonly principals = new Map<string, PrincipalUsage>();
  /** Every record, oldest write first: expired ones are swept from its head. */
  private readonly writes = new WriteQueue();
  private seq = 0;
  private totalBytes = 0;
  private readonly isLive = (id: string, seq: number) => this.records.get(id)?.seq === seq;
  private readonly limits: Required<Omit<MemoryIdempotencyStoreOptions, "now" | "clock">>;
  private readonly now: () => number;
  private readonly clock: Clock;

  constructor(options: MemoryIdempotencyStoreOptions = {}) {
    this.limits = {
      maxBytes: options.maxBytes ?? 64 * MIB,
      maxEntries: options.maxEntries ?? 100_000,
      maxBytesPerPrincipal: options.maxBytesPerPrincipal ?? 16 * MIB,
      maxEntriesPerPrincipal: options.maxEntriesPerPrincipal ?? 10_000,
      maxResponseBytes: options.maxResponseBytes ?? MIB,
    };
    this.clock = options.clock ?? systemClock;
    this.now = options.now ?? (() => this.clock.now());
  }

  /** How many records are held (expired ones included until touched or swept). */
  get size(): number {
    return this.records.size;
  }

  /** How many bytes the held records take, by the store's own accounting. */
  get bytes(): number {
    return this.totalBytes;
  }

  async get(key: IdempotencyKey): Promise<IdempotencyEntry | undefined> {
    const record = this.live(recordKey(key));
    if (!record) {
      return undefined;
    }
    const entry: IdempotencyEntry = { fingerprint: record.fingerprint };
    if (record.response !== undefined) {
      entry.response = JSON.parse(record.response) as CallToolResponse;
    }
    if (record.abandoned) {
      entry.abandoned = true;
    }
    if (record.cancelled) {
      entry.cancelled = true;
    }
    if (record.rerunnable) {
      entry.rerunnable = true;
    }
    if (record.progress) {
      entry.progress = record.progress;
      entry.progressSeq = record.progressSeq ?? 0;
    }
    if (record.leaseUntil !== undefined) {
      entry.leaseUntil = record.leaseUntil;
    }
    return entry;
  }

  async claim(key: IdempotencyKey, fingerprint: string, ttlMs: number): Promise<IdempotencyEntry | undefined> {
    const existing = await this.get(key);
    const dead =
      existing?.leaseUntil !== undefined && existing.response === undefined && existing.leaseUntil < this.now();
    if (existing && !existing.rerunnable && !dead) {
      return existing;
    }
    const refused = this.put(key, { principal: key.principal, fingerprint, expiresAt: this.now() + ttlMs, bytes: 0 });
    if (refused) {
      throw new IdempotencyStoreFullError(refused.retryAfterMs);
    }
    return undefined;
  }

  async complete(key: IdempotencyKey, entry: CompletedEntry, ttlMs: number): Promise<void> {
    const response = JSON.stringify(entry.response);
    const responseBytes = utf8ByteLength(response);
    if (responseBytes > this.limits.maxResponseBytes) {
      this.remove(recordKey(key));
      return;
    }
    const record: StoredRecord = {
      principal: key.principal,
      fingerprint: entry.fingerprint,
      response,
      expiresAt: this.now() + ttlMs,
      bytes: 0,
    };
    if (entry.cancelled) {
      record.cancelled = true;
    }
    if (entry.rerunnable) {
      record.rerunnable = true;
    }
    this.put(key, record, responseBytes);
    this.wake(key);
    this.emit(key, "settled");
  }

  async abandon(key: IdempotencyKey, fingerprint: string, ttlMs: number): Promise<void> {
    this.put(key, { principal: key.principal, fingerprint, abandoned: true, expiresAt: this.now() + ttlMs, bytes: 0 });
    this.wake(key);
  }

  async release(key: IdempotencyKey, response?: CallToolResponse): Promise<void> {
    this.remove(recordKey(key));
    this.wake(key, response);
    this.emit(key, "settled");
  }

  waitFor(key: IdempotencyKey, fingerprint: string, maxMs: number): Promise<IdempotencyEntry | undefined> {
    const id = recordKey(key);
    return new Promise((resolve) => {
      let leaseTimer: ClockTimer | undefined;
      const finish = (entry: IdempotencyEntry | undefined) => {
        this.clock.clearTimeout(timer);
        this.clock.clearTimeout(leaseTimer);
        stopWaiting();
        resolve(entry);
      };
      const check = (released?: CallToolResponse) => {
        if (released) {
          finish({ fingerprint, response: released });
          return;
        }
        const record = this.live(id);
        if (!record || record.fingerprint !== fingerprint) {
          finish(undefined);
        } else if (record.response !== undefined || record.abandoned) {
          void this.get(key).then(finish);
        } else if (record.leaseUntil !== undefined) {
          // Nobody vouches for the run past its lease: the caller claims the key (a claim hands a dead run's key over).
          const left = record.leaseUntil - this.now();
          this.clock.clearTimeout(leaseTimer);
          if (left < 0) {
            finish(undefined);
          } else {
            leaseTimer = this.clock.setTimeout(() => check(), left + 1);
          }
        }
      };
      const timer = this.clock.setTimeout(() => finish(undefined), maxMs);
      const stopWaiting = this.waiters.add(id, check);
      check();
    });
  }

  async progress(
    key: IdempotencyKey,
    fingerprint: string,
    update: { progress: CallProgress; seq: number },
  ): Promise<boolean> {
    const record = this.live(recordKey(key));
    if (!record || record.fingerprint !== fingerprint || record.response !== undefined) {
      return false;
    }
    record.progress = update.progress;
    record.progressSeq = update.seq;
    this.emit(key, "progress");
    return true;
  }

  async renew(key: IdempotencyKey, fingerprint: string, leaseMs: number): Promise<void> {
    const record = this.live(recordKey(key));
    if (record && record.fingerprint === fingerprint && record.response === undefined) {
      record.leaseUntil = this.now() + leaseMs;
      this.wake(key);
    }
  }

  async cancel(key: IdempotencyKey): Promise<void> {
    this.emit(key, "cancel");
  }

  watch(key: IdempotencyKey, listener: (event: TaskEvent) => void): () => void {
    return this.watchers.add(recordKey(key), listener);
  }

  /** Tells the key's waiters that it was written (and the response it was released with, if any). */
  private wake(key: IdempotencyKey, released?: CallToolResponse): void {
    this.waiters.emit(recordKey(key), released);
  }

  /** Tells the key's watchers of a change. */
  private emit(key: IdempotencyKey, event: TaskEvent): void {
    this.watchers.emit(recordKey(key), event);
  }

  /** The record under `id` unless it has expired (an expired one is dropped). */
  private live(id: string): StoredRecord | undefined {
    const record = this.records.get(id);
    if (record && record.expiresAt <= this.now()) {
      this.remove(id);
      return undefined;
    }
    return record;
  }

  /**
   * Writes a record as the newest of its principal, making room first. When there is none, the key is
   * left free and the answer says when to retry (`complete` then simply keeps nothing). `responseBytes` is
   * `record.response`'s size in UTF-8, which `complete` has measured already.
   */
  private put(key: IdempotencyKey, record: StoredRecord, responseBytes = 0): { retryAfterMs: number } | undefined {
    const id = recordKey(key);
    record.bytes = RECORD_OVERHEAD_BYTES + 2 * (id.length + record.fingerprint.length) + responseBytes;
    this.remove(id);
    this.sweepExpired();
    const usage = this.principals.get(record.principal) ?? { bytes: 0, count: 0, queue: new WriteQueue() };
    const fits = () =>
      usage.bytes + record.bytes <= this.limits.maxBytesPerPrincipal &&
      usage.count < this.limits.maxEntriesPerPrincipal;
    // Over its own quota, a principal loses its own oldest finished records, nobody else's.
    if (!fits()) {
      for (const oldest of usage.queue.live(this.isLive)) {
        if (this.records.get(oldest)?.response !== undefined) {
          this.remove(oldest);
        }
        if (fits()) {
          break;
        }
      }
    }
    const overQuota = !fits();
    const overTotal =
      this.totalBytes + record.bytes > this.limits.maxBytes || this.records.size >= this.limits.maxEntries;
    if (overQuota || overTotal) {
      return { retryAfterMs: this.retryAfterMs((overQuota ? usage.queue : this.writes).live(this.isLive)) };
    }
    record.seq = ++this.seq;
    this.records.set(id, record);
    this.writes.push(id, record.seq);
    this.writes.compact(this.records.size, this.isLive);
    usage.queue.push(id, record.seq);
    usage.bytes += record.bytes;
    usage.count++;
    usage.queue.compact(usage.count, this.isLive);
    this.principals.set(record.principal, usage);
    this.totalBytes += record.bytes;
    return undefined;
  }

  private remove(id: string): void {
    const record = this.records.get(id);
    if (!record) {
      return;
    }
    this.records.delete(id);
    this.totalBytes -= record.bytes;
    const usage = this.principals.get(record.principal);
    if (!usage) {
      return;
    }
    usage.bytes -= record.bytes;
    usage.count--;
    if (usage.count === 0) {
      this.principals.delete(record.principal);
    }
  }

  /** Drops expired records from the oldest writes on: amortized constant time per write. */
  private sweepExpired(): void {
    const now = this.now();
    for (const id of this.writes.live(this.isLive)) {
      if ((this.records.get(id)?.expiresAt ?? 0) > now) {
        break;
      }
      this.remove(id);
    }
  }

  /** About when the oldest of the records that block a new key expires: a hint, so only the oldest few are read. */
  private retryAfterMs(ids: Iterable<string>): number {
    let soonest = Number.POSITIVE_INFINITY;
    let read = 0;
    for (const id of ids) {
      soonest = Math.min(soonest, this.records.get(id)?.expiresAt ?? soonest);
      if (++read === 64) {
        break;
      }
    }
    return Number.isFinite(soonest) ? Math.max(1_000, soonest - this.now()) : 1_000;
  }
}
