// The real clock's timers, in the order the event loop runs them.
import { stat } from "node:fs";
import { describe, expect, it } from "vitest";
import { systemClock } from "./clock.js";

/**
 * Runs `schedule` inside an I/O callback, where Node runs every immediate before any timer; resolves with the order
 * once `expected` callbacks have run.
 */
function orderInIoCallback(
  expected: number,
  schedule: (seen: { push(name: string): void }) => void,
): Promise<string[]> {
  return new Promise((resolve) => {
    stat(import.meta.dirname, () => {
      const seen: string[] = [];
      schedule({
        push(name) {
          seen.push(name);
          if (seen.length === expected) {
            resolve(seen);
          }
        },
      });
    });
  });
}

describe("systemClock", () => {
  it("fires a timer due at once on the next turn, before a timer of 1 ms (Node holds a 0 ms setTimeout 1 ms)", async () => {
    // Without its own path, a 0 ms timer set in an I/O callback fires after an immediate set after it, always.
    const seen = await orderInIoCallback(3, (seen) => {
      systemClock.setTimeout(() => seen.push("zero"), 0);
      systemClock.setTimeout(() => seen.push("negative"), -5);
      setImmediate(() => seen.push("immediate"));
    });
    expect(seen).toEqual(["zero", "negative", "immediate"]);
  });

  it("clears a timer due at once, and a later one, each with its own function", async () => {
    const seen = await orderInIoCallback(1, (seen) => {
      systemClock.clearTimeout(systemClock.setTimeout(() => seen.push("zero, cleared"), 0));
      systemClock.clearTimeout(systemClock.setTimeout(() => seen.push("later, cleared"), 1));
      // real time: the real clock's timers are what is under test; this one is due after both cleared ones.
      systemClock.setTimeout(() => seen.push("later"), 2);
    });
    // Either cleared one, had it fired, would have come first.
    expect(seen).toEqual(["later"]);
  });
});
