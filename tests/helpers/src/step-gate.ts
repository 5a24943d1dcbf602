// Tools whose steps run when a test lets them: the test, not the wall clock, decides when each progress happens and when a call ends.

/**
 * How many steps of each call (by call_id) a test has let run; a tool's run waits in {@link StepGate.stepAllowed}
 * for the rest. Call {@link StepGate.releaseAll} after each test (`afterEach(() => gate.releaseAll())`): a test's
 * calls then end with it, whatever it let them do.
 *
 * @example
 * const gate = new StepGate();
 * // in the tool: await gate.stepAllowed(context.callId, step, context.signal);
 * gate.allow("call-1", 2); // steps 1 and 2 of call-1 may run
 */
export class StepGate {
  readonly #allowed = new Map<string, number>();
  readonly #waiting = new Set<() => void>();
  readonly #gated = new Set<string>();

  /** Lets the call's steps up to `step` run: all of them by default. A step let run before stays so. */
  allow(callId: string, step = Number.POSITIVE_INFINITY): void {
    this.#allowed.set(callId, Math.max(step, this.#allowed.get(callId) ?? 0));
    for (const wake of [...this.#waiting]) {
      wake();
    }
  }

  /** Lets every call that waited for a step run to its end. */
  releaseAll(): void {
    for (const callId of this.#gated) {
      this.allow(callId);
    }
  }

  /** Resolves once the test lets the call's `step` run; rejects with the signal's reason if it aborts first. */
  async stepAllowed(callId: string, step: number, signal: AbortSignal): Promise<void> {
    this.#gated.add(callId);
    while ((this.#allowed.get(callId) ?? 0) < step) {
      await new Promise<void>((resolve, reject) => {
        const stop = () => {
          this.#waiting.delete(wake);
          signal.removeEventListener("abort", onAbort);
        };
        const wake = () => {
          stop();
          resolve();
        };
        const onAbort = () => {
          stop();
          reject(signal.reason);
        };
        if (signal.aborted) {
          onAbort();
          return;
        }
        this.#waiting.add(wake);
        signal.addEventListener("abort", onAbort, { once: true });
      });
    }
  }
}
