// The real clock's timers, in the order the event loop runs them.
import { stat } from "node:fs";
import { describe, expect, it } from "vitest";
import { systemClock } from "./clock.js";

/** Runs `schedule` inside an I/O callback, where Node runs every immediate before any timer; resolves with the order. */
function orderInIoCallback(schedule: (seen: string[]) => number): Promise<string[]> {
  return new Promise((resolve) => {
    stat(import.meta.dirname, () => {
      const seen: string[] = [];
      const expected = schedule(seen);
      const check = () => (seen.length >= expected ? resolve(seen) : setTimeout(check, 1));
      setTimeout(check, 1);
    });
  });
}

describe("systemClock", () => {
  it("fires a timer due at once on the next turn, before a timer of 1 ms (Node holds a 0 ms setTimeout 1 ms)", async () => {
    // Without its own path, a 0 ms timer set in an I/O callback fires after an immediate set after it, always.
    const seen = await orderInIoCallback((seen) => {
      systemClock.setTimeout(() => seen.push("zero"), 0);
      systemClock.setTimeout(() => seen.push("negative"), -5);
      setImmediate(() => seen.push("immediate"));
      return 3;
    });
    expect(seen).toEqual(["zero", "negative", "immediate"]);
  });

  it("clears a timer due at once, and a later one, each with its own function", async () => {
    const seen = await orderInIoCallback((seen) => {
      systemClock.clearTimeout(systemClock.setTimeout(() => seen.push("zero, cleared"), 0));
      systemClock.clearTimeout(systemClock.setTimeout(() => seen.push("later, cleared"), 1));
      systemClock.setTimeout(() => seen.push("later"), 2);
      return 1;
    });
    // The cleared ones would have fired by now: the last one is due after both.
    expect(seen).toEqual(["later"]);
  });
});
