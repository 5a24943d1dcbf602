// Waiting for a condition instead of a fixed delay: a test goes on as soon as what it waits for has happened, however busy the machine.
import { setTimeout as sleep } from "node:timers/promises";

/** Options of {@link until}. */
export interface UntilOptions {
  /** How long to look before failing: only a guard against a hang, never the test's logic. Default 60 s. */
  timeoutMs?: number;
  /** Says what was awaited, in the error. */
  what?: string;
}

/**
 * Resolves once `check` holds, looking again every few milliseconds; rejects after `timeoutMs`. What a test waits
 * for is the condition itself (a status read, a log line, a counter), so a slow machine makes it slower, not wrong.
 *
 * @example
 * await until(() => counts.started === 3);
 * await until(async () => (await statusOf(callId)).body.status !== "running", { what: "the call to end" });
 */
export async function until(check: () => boolean | Promise<boolean>, options: UntilOptions = {}): Promise<void> {
  const timeoutMs = options.timeoutMs ?? 60_000;
  const deadline = Date.now() + timeoutMs;
  while (!(await check())) {
    if (Date.now() > deadline) {
      throw new Error(`${options.what ?? "the condition"} did not come true within ${timeoutMs} ms`);
    }
    await sleep(10);
  }
}
