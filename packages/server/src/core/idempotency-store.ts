/** Where `call_id` idempotency records live: the interface, and a bounded in-memory store with a TTL. */
import type { CallToolResponse } from "@otc/types";
import { setBounded } from "./bounded-map.js";

/** What a store holds for one call_id: the call's fingerprint, and its response once finished. */
export interface IdempotencyEntry {
  /** A hash of what makes two calls "the same call" (resolved tool, input, user id, principal). */
  fingerprint: string;
  /** Absent while the first call with this key is still running. */
  response?: CallToolResponse;
}

/**
 * Idempotency records keyed by call_id. A store shared by several server instances (e.g. Redis)
 * lets them honour the same keys; `claim` must then be atomic (SET NX).
 */
export interface IdempotencyStore {
  /**
   * Claims `key` for a new call. Returns undefined when the caller now holds the key (it must later
   * `complete` or `release` it), or the entry that already holds it. A claim lapses after `ttlMs`.
   */
  claim(key: string, fingerprint: string, ttlMs: number): Promise<IdempotencyEntry | undefined>;
  /** Stores the finished response of a claimed key, kept for `ttlMs`. */
  complete(key: string, entry: Required<IdempotencyEntry>, ttlMs: number): Promise<void>;
  /** Frees a claimed key without storing anything, so the call may run again. */
  release(key: string): Promise<void>;
  /** The entry that holds `key`, if any. */
  get(key: string): Promise<IdempotencyEntry | undefined>;
}

/** Options of {@link MemoryIdempotencyStore}. */
export interface MemoryIdempotencyStoreOptions {
  /** The most entries kept; the oldest go first. Default 10,000. */
  maxEntries?: number;
  /** The clock, for tests. */
  now?: () => number;
}

/** An in-process idempotency store, bounded in size, entries expiring after their TTL. */
export class MemoryIdempotencyStore implements IdempotencyStore {
  private readonly entries = new Map<string, { entry: IdempotencyEntry; expiresAt: number }>();
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(options: MemoryIdempotencyStoreOptions = {}) {
    this.maxEntries = options.maxEntries ?? 10_000;
    this.now = options.now ?? Date.now;
  }

  /** How many entries are held (expired ones included until touched or evicted). */
  get size(): number {
    return this.entries.size;
  }

  async get(key: string): Promise<IdempotencyEntry | undefined> {
    const held = this.entries.get(key);
    if (!held) return undefined;
    if (held.expiresAt <= this.now()) {
      this.entries.delete(key);
      return undefined;
    }
    return held.entry;
  }

  async claim(key: string, fingerprint: string, ttlMs: number): Promise<IdempotencyEntry | undefined> {
    const existing = await this.get(key);
    if (existing) return existing;
    this.put(key, { fingerprint }, ttlMs);
    return undefined;
  }

  async complete(key: string, entry: Required<IdempotencyEntry>, ttlMs: number): Promise<void> {
    this.put(key, entry, ttlMs);
  }

  async release(key: string): Promise<void> {
    this.entries.delete(key);
  }

  private put(key: string, entry: IdempotencyEntry, ttlMs: number): void {
    setBounded(this.entries, key, { entry, expiresAt: this.now() + ttlMs }, this.maxEntries);
  }
}
