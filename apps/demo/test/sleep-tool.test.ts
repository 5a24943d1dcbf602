// System.Sleep's run on its own, on fake timers: it reports progress every 100 ms, and an abort stops it at once, its timers cleared.
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect, vi } from "vitest";
import { demoTools } from "../src/tools.js";

describe("System.Sleep's run", () => {
  const sleep = demoTools().find((tool) => `${tool.toolkit}.${tool.name}@${tool.version}` === "System.Sleep@1.0.0");
  if (!sleep) {
    throw new Error("the demo has no System.Sleep@1.0.0");
  }
  /** Runs the tool with a context of its own: the progress it reports, and the controller of its signal. */
  const run = (ms: number) => {
    const controller = new AbortController();
    const reports: { progress: number; total?: number; message?: string }[] = [];
    const context = { signal: controller.signal, progress: (update: (typeof reports)[number]) => reports.push(update) };
    const settled = Promise.resolve(sleep.run({ ms }, context as never)).then(
      (value) => ({ value }),
      (reason: unknown) => ({ reason }),
    );
    return { controller, reports, settled };
  };
  afterEach(() => {
    vi.useRealTimers();
  });

  verifies("tasks.progress", "reports every 100 ms how long it has slept, then answers slept_ms", async () => {
    vi.useFakeTimers();
    const { reports, settled } = run(350);
    await vi.advanceTimersByTimeAsync(350);
    expect(await settled).toEqual({ value: { slept_ms: 350 } });
    expect(reports).toEqual(
      [100, 200, 300].map((ms) => ({ progress: ms, total: 350, message: `Slept ${ms} of 350 ms` })),
    );
    expect(vi.getTimerCount()).toBe(0);
  });

  verifies("tasks.cancel", "rejects with the signal's reason at once and clears its timers when aborted", async () => {
    vi.useFakeTimers();
    const { controller, reports, settled } = run(60_000);
    await vi.advanceTimersByTimeAsync(250);
    expect(reports).toHaveLength(2);
    const reason = new Error("cancelled by a client");
    controller.abort(reason);
    expect(await settled).toEqual({ reason });
    expect(vi.getTimerCount()).toBe(0);
    await vi.advanceTimersByTimeAsync(60_000);
    expect(reports).toHaveLength(2);
  });

  verifies("tasks.cancel", "does not start when its signal has fired already", async () => {
    vi.useFakeTimers();
    const reason = new Error("aborted before the run");
    const controller = new AbortController();
    controller.abort(reason);
    const started = sleep.run({ ms: 1_000 }, { signal: controller.signal, progress() {} } as never);
    await expect(Promise.resolve(started)).rejects.toBe(reason);
    expect(vi.getTimerCount()).toBe(0);
  });
});
