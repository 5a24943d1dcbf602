/** Where the client waits between attempts and between polls: the runtime's timers, or a clock a test moves by hand. */

/**
 * Where a client waits between attempts and between polls, and reads the time those waits are measured on. The shape
 * of `@otc/server`'s `Clock`: a test passes one clock it moves by hand (`@otc/test-helpers`' ManualClock) to both.
 *
 * @example
 * const client = createClient({ baseUrl, clock: new ManualClock() });
 */
export interface ClientClock {
  /** Milliseconds since the epoch. */
  now(): number;
  /** Calls `callback` once `ms` milliseconds have passed on this clock. */
  setTimeout(callback: () => void, ms: number): unknown;
  /** Cancels a timer of this clock; one that fired already is ignored. */
  clearTimeout(timer: unknown): void;
}

/** The runtime's clock: `Date.now()` and its timers, looked up on each use, so that vitest's fake timers move it too. */
export const runtimeClock: ClientClock = {
  now: () => Date.now(),
  setTimeout: (callback, ms) => globalThis.setTimeout(callback, ms),
  clearTimeout(timer) {
    globalThis.clearTimeout(timer as ReturnType<typeof globalThis.setTimeout> | undefined);
  },
};

/** Waits `ms` on `clock`, rejecting with the signal's reason when it aborts (at once if it has). */
export function sleepOn(clock: ClientClock, ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(signal.reason);
      return;
    }
    const onAbort = () => {
      clock.clearTimeout(timer);
      reject(signal?.reason);
    };
    const timer = clock.setTimeout(() => {
      signal?.removeEventListener("abort", onAbort);
      resolve();
    }, ms);
    signal?.addEventListener("abort", onAbort, { once: true });
  });
}
