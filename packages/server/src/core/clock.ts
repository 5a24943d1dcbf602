/** The clock a server's logic follows (expiry, leases, long polls, keep-alives, time limits): real by default, moved by hand in tests. */

/** A pending timer of a {@link Clock}: only its clock's `clearTimeout` reads it. */
export type ClockTimer = { readonly __clockTimer: unique symbol } | object | number;

/**
 * Where the server reads the time and sets its timers. Every time rule of the server (a call_id's TTL, a task's lease,
 * a long poll, an event stream's keep-alive, a tool's time limit, a token's `exp`) follows it, so a test can move it by
 * hand instead of waiting on the wall clock. Durations that measure work (a call's `duration`, CPU charged to a
 * client) are measurements, not rules, and stay on the process's own monotonic clock.
 *
 * @example
 * const core = new OxpCore({ tools, clock: systemClock });
 */
export interface Clock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` once `ms` milliseconds have passed on this clock ({@link unrefTimer} lets the process exit first). */
  setTimeout(callback: () => void, ms: number): ClockTimer;
  /** Cancels a timer of this clock; undefined and a timer that already fired are ignored. */
  clearTimeout(timer: ClockTimer | undefined): void;
}

/** The handles of the timers {@link systemClock} set as immediates, so that it clears each with its own function. */
const immediates = new WeakSet<object>();

/**
 * The real clock: `Date.now()` and the runtime's timers, looked up on each use, so that vitest's fake timers move
 * it too. A timer due at once (0 ms or less) fires on the next turn of the event loop (`setImmediate`, where the
 * runtime has it), as the test clock's does: Node holds a 0 ms `setTimeout` for at least 1 ms, and so it held every
 * 202 of `Prefer: respond-async` without a wait (2.2-2.5 ms against 0.7-0.8 ms to the 202 in `node bench/tasks.mjs`).
 */
export const systemClock: Clock = {
  now: () => Date.now(),
  setTimeout(callback, ms) {
    if (ms <= 0 && typeof globalThis.setImmediate === "function") {
      const immediate = globalThis.setImmediate(callback);
      immediates.add(immediate);
      return immediate as ClockTimer;
    }
    return globalThis.setTimeout(callback, ms) as ClockTimer;
  },
  clearTimeout(timer) {
    if (typeof timer === "object" && timer !== null && immediates.has(timer)) {
      // clearImmediate on a Timeout (or clearTimeout on an Immediate) would not clear it: each has its own.
      globalThis.clearImmediate(timer as ReturnType<typeof setImmediate>);
      return;
    }
    globalThis.clearTimeout(timer as ReturnType<typeof setTimeout> | undefined);
  },
};

/** Lets the process exit with `timer` pending, where the runtime can say so (Node, Bun: not workerd's numbers, nor a test clock's). */
export function unrefTimer(timer: ClockTimer | undefined): void {
  (timer as { unref?: () => void } | undefined)?.unref?.();
}

/**
 * A promise that resolves after `ms` on `clock`, or at once (and quietly) when `signal` aborts.
 *
 * @example
 * await sleepOn(clock, 25);
 */
export function sleepOn(clock: Clock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) {
      resolve();
      return;
    }
    const done = () => {
      clock.clearTimeout(timer);
      signal?.removeEventListener("abort", done);
      resolve();
    };
    const timer = clock.setTimeout(done, ms);
    signal?.addEventListener("abort", done, { once: true });
  });
}

/**
 * Calls `callback` every `ms` on `clock` until the returned function is called; its timers do not keep the process
 * alive.
 *
 * @example
 * const stop = everyOn(clock, 1_000, renewLease);
 */
export function everyOn(clock: Clock, ms: number, callback: () => void): () => void {
  let timer: ClockTimer | undefined;
  let stopped = false;
  const tick = () => {
    if (stopped) {
      return;
    }
    timer = clock.setTimeout(tick, ms);
    unrefTimer(timer);
    callback();
  };
  timer = clock.setTimeout(tick, ms);
  unrefTimer(timer);
  return () => {
    stopped = true;
    clock.clearTimeout(timer);
  };
}
