// A clock that moves only when a test moves it: expiry, leases, long polls and keep-alives are tested without waiting on the wall clock.
import { setImmediate as nextTurn } from "node:timers/promises";

interface Pending {
  at: number;
  order: number;
  callback: () => void;
}

/**
 * A test clock with the shape of `@otc/server/core`'s `Clock`: `now()` stays put and timers never fire until the test
 * calls {@link ManualClock.advance}, which fires every timer due on the way, in time order, letting the code each one
 * runs take its turn (promises, I/O already arrived) before the next.
 *
 * @example
 * const clock = new ManualClock();
 * const core = new OxpCore({ tools, clock });
 * await clock.advance(60_000); // the call_id's TTL ran out
 */
export class ManualClock {
  #now: number;
  #order = 0;
  readonly #pending = new Set<Pending>();
  readonly #scheduled = new Set<() => void>();

  /** Starts at `start` (epoch ms): by default a fixed date, so that a test's times read the same on every run. */
  constructor(start = Date.UTC(2026, 0, 1)) {
    this.#now = start;
  }

  /** The clock's time, in epoch milliseconds; a bound function, so it can be handed on alone (`{ now: clock.now }`). */
  readonly now = (): number => this.#now;

  /**
   * Sets a timer due `ms` from now. One due at once (`ms` of 0 or less) fires on the next turn of the event loop, as
   * a real one would: the clock need not move for it. Any later one fires only in {@link advance}.
   */
  setTimeout(callback: () => void, ms: number): object {
    const pending: Pending = { at: this.#now + Math.max(0, ms), order: this.#order++, callback };
    this.#pending.add(pending);
    if (ms <= 0) {
      setImmediate(() => {
        if (this.#pending.delete(pending)) {
          callback();
        }
      });
    }
    for (const notify of this.#scheduled) {
      notify();
    }
    return pending;
  }

  clearTimeout(timer: unknown): void {
    this.#pending.delete(timer as Pending);
  }

  /** How many timers are set and not yet fired or cleared. */
  get pending(): number {
    return this.#pending.size;
  }

  /**
   * Moves the clock `ms` forward, firing each timer due on the way at its own time, the earliest first. After each,
   * the code it started runs until it waits on something else, so a timer it sets on the way fires too when due.
   */
  async advance(ms: number): Promise<void> {
    const until = this.#now + ms;
    await settle();
    for (;;) {
      const next = this.#earliest();
      if (!next || next.at > until) {
        break;
      }
      this.#pending.delete(next);
      this.#now = Math.max(this.#now, next.at);
      next.callback();
      await settle();
    }
    this.#now = until;
    await settle();
  }

  /**
   * Moves the clock `ms` forward without firing any timer: a busy event loop, whose timers due meanwhile run late.
   * The next {@link advance} fires them.
   */
  skip(ms: number): void {
    this.#now += ms;
  }

  /**
   * Resolves once at least `count` timers are pending: the code under test reached the wait a test then moves
   * past. Real time only passes while the code under test works (I/O, a server's answer), never as a fixed delay.
   */
  async untilPending(count = 1): Promise<void> {
    while (this.#pending.size < count) {
      await new Promise<void>((resolve) => {
        const notify = () => {
          this.#scheduled.delete(notify);
          resolve();
        };
        this.#scheduled.add(notify);
      });
    }
  }

  #earliest(): Pending | undefined {
    let earliest: Pending | undefined;
    for (const pending of this.#pending) {
      if (!earliest || pending.at < earliest.at || (pending.at === earliest.at && pending.order < earliest.order)) {
        earliest = pending;
      }
    }
    return earliest;
  }
}

/** Lets pending promise callbacks and arrived I/O callbacks run: a few turns of the event loop. */
async function settle(): Promise<void> {
  for (let turn = 0; turn < 5; turn++) {
    await nextTurn();
  }
}
