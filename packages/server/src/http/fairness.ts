/**
 * The fair-share meter of one call: measures the server's work on it in stretches (the body's pieces, the checks,
 * the run up to its first wait, the answer's writing) and charges it to the client's {@link ClientBudget}. Waits
 * are not work: the meter is paused across them.
 */
import type { ClientBudget } from "./client-budget.js";

/**
 * One call's meter. It starts paused with nothing measured; {@link resume} and {@link pause} bound each stretch of
 * work, and {@link charge} charges what was measured since the last charge. The clock is read only where a stretch
 * begins or ends, and a charge that ends a stretch shares its reading with the budget.
 */
export class FairnessMeter {
  /** Work measured in stretches that ended, not charged yet, in milliseconds. */
  private carried = 0;
  /** When the running stretch began (as `performance.now()` reads it). */
  private from = 0;
  private running = false;
  /** True from a charge until the next stretch: nothing is left to charge. */
  private charged = false;

  constructor(
    private readonly budget: ClientBudget,
    private readonly client: string,
  ) {}

  /** Begins a stretch of work. */
  resume(): void {
    this.from = performance.now();
    this.running = true;
    this.charged = false;
  }

  /** Ends the running stretch, keeping what it measured for the next charge. */
  pause(): void {
    this.carried += performance.now() - this.from;
    this.running = false;
  }

  /**
   * Charges the client what was measured since the last charge (the running stretch up to now included, which it
   * ends), even nothing: a refused call counts as the client's activity. Nothing after a charge until the next
   * stretch begins: a wait that ends in an error charges nothing more.
   */
  charge(): void {
    if (this.charged) {
      return;
    }
    if (this.running) {
      const now = performance.now();
      this.budget.charge(this.client, this.carried + now - this.from, now);
    } else {
      this.budget.charge(this.client, this.carried);
    }
    this.carried = 0;
    this.running = false;
    this.charged = true;
  }
}
