// The tasks extension's pieces without HTTP: the Prefer header, and a task's progress (docs/protocol.md 9.3).
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { LocalTask, parsePrefer } from "./tasks.js";

describe("parsePrefer", () => {
  it.each([
    [undefined, { respondAsync: false, waitSeconds: undefined }],
    ["respond-async", { respondAsync: true, waitSeconds: undefined }],
    ["Respond-Async, wait=10", { respondAsync: true, waitSeconds: 10 }],
    ['respond-async; x=1, wait="3"', { respondAsync: true, waitSeconds: 3 }],
    ["wait=120", { respondAsync: false, waitSeconds: 30 }],
    ["wait=-1, wait=abc, wait=1.5", { respondAsync: false, waitSeconds: undefined }],
    ["handling=lenient, return=minimal", { respondAsync: false, waitSeconds: undefined }],
  ])("%s -> %j", (header, want) => {
    expect(parsePrefer(header)).toEqual(want);
  });
});

describe("LocalTask", () => {
  verifies(
    "tasks.progress",
    "answers its last report before its end, though a shared store has not confirmed it yet",
    async () => {
      // A store that answers a progress a moment later, as Redis does.
      const clock = new ManualClock();
      const task = new LocalTask("c", {
        async: true,
        perSecond: 10,
        record: () => new Promise((resolve) => clock.setTimeout(() => resolve(true), 20)),
        clock,
      });
      const seen: string[] = [];
      task.watch(() => seen.push(task.end ? "end" : `progress ${task.progress?.progress}`));
      task.report({ progress: 1 });
      await clock.advance(40);
      // Within the interval: pending, kept when the call ends.
      task.report({ progress: 2 });
      task.settle({ response: { call_id: "c", duration: 1, success: true, value: null }, cancelled: false });
      expect(seen).toEqual(["progress 1", "progress 2", "end"]);
      expect(task.seq).toBe(2);
    },
  );

  verifies("tasks.progress", "keeps the first report at once and the latest of each interval after it", async () => {
    const clock = new ManualClock();
    const task = new LocalTask("c", { async: true, perSecond: 20, clock });
    const kept: number[] = [];
    task.watch(() => {
      if (task.progress) {
        kept.push(task.progress.progress);
      }
    });
    for (let step = 1; step <= 10; step++) {
      task.report({ progress: step });
    }
    expect(kept).toEqual([1]);
    await clock.advance(49);
    expect(kept).toEqual([1]);
    await clock.advance(1);
    expect(kept).toEqual([1, 10]);
    expect(task.seq).toBe(2);
  });

  verifies("tasks.progress", "never keeps a pending report after a newer one (its timer late on a busy loop)", () => {
    const clock = new ManualClock();
    const task = new LocalTask("c", { async: true, perSecond: 10, clock });
    const kept: number[] = [];
    task.watch(() => kept.push(task.progress?.progress ?? -1));
    task.report({ progress: 1 });
    task.report({ progress: 2 });
    // The event loop is busy past the interval: the pending report's timer has not run yet when a newer one comes.
    clock.skip(120);
    task.report({ progress: 3 });
    task.settle({ response: { call_id: "c", duration: 1, success: true, value: null }, cancelled: false });
    expect(kept).toEqual([1, 3, 3]);
  });

  verifies("tasks.progress", "keeps a report at once when the clock was set back since the last one", () => {
    const timers = new ManualClock();
    let now = timers.now();
    const clock = {
      now: () => now,
      setTimeout: timers.setTimeout.bind(timers),
      clearTimeout: timers.clearTimeout.bind(timers),
    };
    const task = new LocalTask("c", { async: true, perSecond: 4, clock });
    task.report({ progress: 1 });
    // The wall clock adjusted an hour back: the next report is not held until it catches up.
    now -= 3_600_000;
    task.report({ progress: 2 });
    expect(task.progress?.progress).toBe(2);
  });

  verifies("tasks.progress", "drops what does not increase or is malformed, and cuts long messages", () => {
    const clock = new ManualClock();
    const task = new LocalTask("c", { async: true, perSecond: 1_000_000, clock });
    task.report({ progress: 5, total: 10, message: `${"x".repeat(999)}😀` });
    expect(task.progress?.message).toHaveLength(999);
    for (const update of [
      { progress: 5 },
      { progress: 4 },
      { progress: -1 },
      { progress: Number.POSITIVE_INFINITY },
      null,
      "6",
    ]) {
      task.report(update);
    }
    expect(task.progress?.progress).toBe(5);
    // Past the (microsecond) interval: kept at once.
    clock.skip(1);
    task.report({ progress: 6, total: Number.NaN, message: "" });
    expect(task.progress).toEqual({ progress: 6 });
    expect(task.seq).toBe(2);
  });

  it("keeps a pending report when the call ends, and nothing after", () => {
    const task = new LocalTask("c", { async: false, perSecond: 1 });
    task.report({ progress: 1 });
    task.report({ progress: 2 });
    const response = { call_id: "c", duration: 1, success: true as const, value: null };
    task.settle({ response, cancelled: false });
    expect(task.progress?.progress).toBe(2);
    task.report({ progress: 3 });
    expect(task.status()).toEqual({ call_id: "c", status: "completed", result: response });
    expect(task.cancel()).toBe(false);
  });
});
