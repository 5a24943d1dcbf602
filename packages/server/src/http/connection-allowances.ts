/** Per-address connection allowances for `listen` (docs/protocol.md 7, `[limits.connection-allowances]`): slowloris churns its own sockets, and a full server makes room fairly. */
import type { IncomingMessage } from "node:http";
import type { Socket } from "node:net";
import { addressGroup } from "./ip.js";

export { addressGroup };

/** The allowances, each a positive integer. */
export interface AllowanceLimits {
  /** Connections the server holds at once, all addresses together: its bound. */
  total: number;
  /** Connections one address (an IPv6 /64) may hold at once. */
  perAddress: number;
  /** Pending connections (see {@link isPending}) the server holds at once, all addresses together. */
  pending: number;
  /** Pending connections one address may hold at once. */
  pendingPerAddress: number;
}

/** Where a tracked socket keeps the key of its address group. */
const GROUP = Symbol("oxp.addressGroup");
/** Where a tracked socket keeps when it was admitted (`performance.now()`). */
const OPENED = Symbol("oxp.opened");
/** Where a tracked socket keeps when its last request began (`performance.now()`). */
const ACTIVE = Symbol("oxp.active");

/**
 * How long a pending connection is left alone by the pending allowances: a burst of fresh connections
 * (200 fetches at once from one client) is pending only until its requests are read, and must not be
 * reset for it. A slowloris socket is older than this. The per-address cap and the server's bound apply
 * whatever the age: past them a connection must go, and a young pending one costs the least to lose.
 */
const PENDING_GRACE_MS = 1_000;

type Tracked = Socket & {
  [GROUP]?: string;
  [OPENED]?: number;
  [ACTIVE]?: number;
  _httpMessage?: object | null;
};

/**
 * How long a connection must have gone without a new request before, idle, it counts as pending. A busy
 * keep-alive pool (undici's opens ~100 connections for 50 requests at a time) passes each connection
 * between requests for milliseconds; closing one of those would reset the next request the client sends
 * on it, a POST it must not retry. A connection held idle to take a slot sits there for seconds.
 */
const IDLE_GRACE_MS = 1_000;

/**
 * True while a connection is not working on a whole request: it has not finished sending one (headers
 * and body), or its answer went out and it has carried no request for {@link IDLE_GRACE_MS}. Such a
 * connection costs the server nothing but its slot, so it is the one to give up when a newcomer needs room.
 */
function isPending(socket: Tracked, lastRequest: IncomingMessage | undefined, now: number): boolean {
  // Node's ServerResponse sits in `_httpMessage` from the request's headers until its answer is flushed.
  return !lastRequest?.complete || (!socket._httpMessage && now - (socket[ACTIVE] ?? 0) >= IDLE_GRACE_MS);
}

/**
 * Admits each new connection within the allowances. When one is full the newcomer is let in and the
 * oldest pending connection that fills it is closed instead: a connection that never finishes a request
 * first, then an idle one. A slowloris from one address thus only recycles its own sockets, and a fresh
 * client (from that address too) gets in and is answered before its turn to be closed comes. Only when
 * an address holds its whole allowance in connections working on requests is its newcomer closed.
 *
 * At the server's bound ({@link AllowanceLimits.total}) the decision is the same, made here rather than
 * by Node (whose `maxConnections` drops a newcomer before any handler sees it): the newcomer takes the
 * slot of the oldest pending connection, whatever its age, of the address holding most pending ones
 * among those holding at least as many connections as the newcomer's would; else of a connection, busy
 * or not, of the address holding most, when it holds more than the newcomer's would. A newcomer from an
 * address below its share of the server thus always gets in, however few addresses fill it and with
 * whatever (idle sockets, held calls, long polls); one from an address holding as many as any is closed.
 */
export class ConnectionAllowances {
  private readonly groups = new Map<string, Set<Socket>>();
  private count = 0;

  constructor(
    private readonly limits: AllowanceLimits,
    /** The last request a socket carried (set by `listen` on every request). */
    private readonly lastRequestOf: (socket: Socket) => IncomingMessage | undefined,
    /** The clock the grace periods follow, in milliseconds: the server's own (`Clock.now`), so a test can move it. */
    private readonly now: () => number = () => performance.now(),
  ) {}

  /** Connections held now. */
  get size(): number {
    return this.count;
  }

  /** Takes a new connection in, closing older ones as the allowances require; false when it was closed itself. */
  admit(socket: Socket): boolean {
    const key = addressGroup(socket.remoteAddress);
    let group = this.groups.get(key);
    if (group === undefined) {
      group = new Set();
      this.groups.set(key, group);
    }
    const now = this.now();
    if (group.size >= this.limits.perAddress && !this.evictFrom(group, now, 0, 0)) {
      this.refuse(socket, key, group);
      return false;
    }
    if (this.pendingIn(group, now) >= this.limits.pendingPerAddress) {
      this.evictFrom(group, now, PENDING_GRACE_MS, IDLE_GRACE_MS);
    }
    if (this.count >= this.limits.total) {
      if (!this.makeRoom(group, now)) {
        this.refuse(socket, key, group);
        return false;
      }
    } else if (this.count >= this.limits.pending) {
      // Counting pending connections everywhere costs a pass over all of them: only when there are enough.
      this.enforceTotal(now);
    }

    const tracked = socket as Tracked;
    tracked[GROUP] = key;
    tracked[OPENED] = now;
    // An eviction above may have emptied the group, and so dropped it from the map.
    this.groups.set(key, group);
    group.add(socket);
    this.count++;
    socket.once("close", () => this.forget(tracked));
    return true;
  }

  /** Notes that a connection carries a request: `listen` calls it on every one. */
  active(socket: Socket): void {
    (socket as Tracked)[ACTIVE] = this.now();
  }

  private refuse(socket: Socket, key: string, group: Set<Socket>): void {
    if (group.size === 0) {
      this.groups.delete(key);
    }
    socket.destroy();
  }

  private forget(socket: Tracked): void {
    const key = socket[GROUP];
    const group = key === undefined ? undefined : this.groups.get(key);
    if (key === undefined || !group?.delete(socket)) {
      return;
    }
    this.count--;
    if (group.size === 0) {
      this.groups.delete(key);
    }
  }

  private pendingIn(group: Set<Socket>, now: number): number {
    let pending = 0;
    for (const socket of group) {
      if (isPending(socket, this.lastRequestOf(socket), now)) {
        pending++;
      }
    }
    return pending;
  }

  /** When pending connections fill the server's allowance, closes the oldest of the address holding most. */
  private enforceTotal(now: number): void {
    let total = 0;
    let heaviest: Set<Socket> | undefined;
    let most = 0;
    for (const group of this.groups.values()) {
      const pending = this.pendingIn(group, now);
      total += pending;
      if (pending > most) {
        most = pending;
        heaviest = group;
      }
    }
    if (heaviest && total >= this.limits.pending) {
      this.evictFrom(heaviest, now, PENDING_GRACE_MS, IDLE_GRACE_MS);
    }
  }

  /**
   * At the server's bound, closes one connection for a newcomer of `own`'s address (see the class comment); false
   * when none may go for it. Addresses holding fewer connections than the newcomer's would are passed over unread.
   */
  private makeRoom(own: Set<Socket>, now: number): boolean {
    const mine = own.size + 1;
    let mostPending: Set<Socket> | undefined;
    let most = 0;
    let largest: Set<Socket> | undefined;
    for (const group of this.groups.values()) {
      if (group !== own && group.size < mine) {
        continue;
      }
      const pending = this.pendingIn(group, now);
      if (pending > most) {
        most = pending;
        mostPending = group;
      }
      if (group !== own && group.size > mine && (largest === undefined || group.size > largest.size)) {
        largest = group;
      }
    }
    if (mostPending) {
      return this.evictFrom(mostPending, now, 0, IDLE_GRACE_MS);
    }
    return largest !== undefined && (this.evictFrom(largest, now, 0, 0) || this.evictBusy(largest));
  }

  /**
   * Closes the group's oldest connection without a whole request, else the one idle longest, among those
   * open for at least `minAgeMs` (an idle one only if it has carried no request for `minIdleMs`); false if
   * there is none (all are working, or younger).
   */
  private evictFrom(group: Set<Socket>, now: number, minAgeMs: number, minIdleMs: number): boolean {
    let idle: Socket | undefined;
    for (const socket of group) {
      // Insertion order is age order: past the first young one, all are younger.
      if (now - ((socket as Tracked)[OPENED] ?? 0) < minAgeMs) {
        break;
      }
      const last = this.lastRequestOf(socket);
      if (!last?.complete) {
        return this.evict(socket as Tracked);
      }
      const since = (socket as Tracked)[ACTIVE] ?? 0;
      if (
        !(socket as Tracked)._httpMessage &&
        now - since >= minIdleMs &&
        (idle === undefined || since < ((idle as Tracked)[ACTIVE] ?? 0))
      ) {
        idle = socket;
      }
    }
    return idle !== undefined && this.evict(idle as Tracked);
  }

  /** Closes the group's connection whose request began last (the least work lost); false for an empty group. */
  private evictBusy(group: Set<Socket>): boolean {
    let latest: Tracked | undefined;
    for (const socket of group) {
      const tracked = socket as Tracked;
      if (latest === undefined || (tracked[ACTIVE] ?? 0) >= (latest[ACTIVE] ?? 0)) {
        latest = tracked;
      }
    }
    return latest !== undefined && this.evict(latest);
  }

  private evict(socket: Tracked): true {
    // Forgotten now, not on `close`: the newcomer's count must already see the room made.
    this.forget(socket);
    socket.destroy();
    return true;
  }
}
