// Typed bindings against real @otc/server instances on loopback: bindTools' calls, and bindAsyncTools' tasks
// (docs/protocol.md 9.3) with their progress, typed result and cancel, on a server with tasks and on an OXP 1.0 one.
import { createHandler, defineTool, listen, OxpToolError, type RunningServer } from "@otc/server/node";
import { StepGate } from "@otc/test-helpers/step-gate";
import type { CallProgress } from "@otc/types";
import { afterAll, afterEach, beforeAll, describe, expect, expectTypeOf, it } from "vitest";
import { bindAsyncTools, bindTools } from "./bindings.js";
import { createClient } from "./client.js";
import { OxpToolCallError, OxpValidationError } from "./errors.js";

/** What `otc codegen` writes for these tools. */
interface Tools {
  "Work.Steps@1.0.0": { input: { steps: number; free?: number }; output: { steps: number } };
  "Work.Fails@1.0.0": { input: Record<string, never>; output: null };
}
const toolIds = ["Work.Steps@1.0.0", "Work.Fails@1.0.0"] as const;

/** The steps of each call that the test has let run (the Work.Steps tool waits for the rest). */
const gate = new StepGate();
const allow = (callId: string, step?: number) => gate.allow(callId, step);

// A test's calls end with it, whatever it let them do: one that failed waiting for a step leaves none behind.
afterEach(() => gate.releaseAll());

const tools = [
  defineTool({
    toolkit: "Work",
    name: "Steps",
    version: "1.0.0",
    description: "Takes `steps` steps, reporting each; those past the first `free` wait until the test lets them run.",
    inputSchema: {
      type: "object",
      properties: {
        steps: { type: "integer", minimum: 1, maximum: 1000, description: "How many steps." },
        free: { type: "integer", minimum: 0, maximum: 1000, description: "How many steps run at once. Default all." },
      },
      required: ["steps"],
      additionalProperties: false,
    },
    outputSchema: { type: "object" },
    run: async ({ steps, free = steps }, context) => {
      for (let step = 1; step <= steps; step++) {
        if (step > free) {
          await gate.stepAllowed(context.callId, step, context.signal);
        }
        context.progress({ progress: step, total: steps, message: `step ${step}` });
      }
      return { steps };
    },
  }),
  defineTool({
    toolkit: "Work",
    name: "Fails",
    version: "1.0.0",
    description: "Always fails.",
    inputSchema: {},
    outputSchema: null,
    run: () => {
      throw new OxpToolError("No luck");
    },
  }),
];

let server: RunningServer;
/** The same server with every extension off: OXP 1.0. */
let plain: RunningServer;
beforeAll(async () => {
  [server, plain] = await Promise.all([
    listen(createHandler({ tools, logger: false, progressPerSecond: 50 }), { port: 0 }),
    listen(createHandler({ tools, logger: false, extensions: false }), { port: 0 }),
  ]);
});
afterAll(() => Promise.all([server, plain].map((running) => running?.close())));

/** Every progress of `iterable`, in order; `onEach` is told of each as it comes. */
async function collect(
  iterable: AsyncIterable<CallProgress>,
  onEach: (progress: CallProgress) => void = () => {},
): Promise<CallProgress[]> {
  const seen: CallProgress[] = [];
  for await (const progress of iterable) {
    seen.push(progress);
    onEach(progress);
  }
  return seen;
}

describe("bindTools", () => {
  it("resolves with the tool's value and throws OxpToolCallError when it fails", async () => {
    const bound = bindTools<Tools>(createClient({ baseUrl: server.url }), toolIds);
    const value = await bound["Work.Steps@1.0.0"]({ steps: 1 }, { callId: "sync-1" });
    expectTypeOf(value).toEqualTypeOf<{ steps: number }>();
    expect(value).toEqual({ steps: 1 });
    const failure = await bound["Work.Fails@1.0.0"]({}, { callId: "sync-2" }).catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(OxpToolCallError);
    expect(failure).toMatchObject({ callId: "sync-2", error: { message: "No luck" } });
  });
});

describe("bindAsyncTools", () => {
  it("starts a task whose progress streams and whose result() resolves with the typed value", async () => {
    const bound = bindAsyncTools<Tools>(createClient({ baseUrl: server.url }), toolIds);
    const modes: string[] = [];
    // Each step waits until the test lets it run: the first now, each next one once the one before was seen here,
    // so that none supersedes another unseen however late a busy machine runs this reader.
    const call = await bound["Work.Steps@1.0.0"](
      { steps: 3, free: 0 },
      { callId: "async-1", onFollow: (mode) => modes.push(mode) },
    );
    expect(call).toMatchObject({ callId: "async-1", task: true });
    allow("async-1", 1);
    const progress = await collect(call.progress, (seen) => allow("async-1", seen.progress + 1));
    expect(progress.map((entry) => entry.progress)).toEqual([1, 2, 3]);
    // callToolAsync's options reach it: onFollow was told of the stream.
    expect(modes).toEqual(["events"]);
    const value = await call.result();
    expectTypeOf(value).toEqualTypeOf<{ steps: number }>();
    expect(value).toEqual({ steps: 3 });
    expect(await call.status()).toMatchObject({ status: "completed", result: { success: true, value } });
    // @ts-expect-error the input is typed as the synchronous binding's
    const wrong = () => bound["Work.Steps@1.0.0"]({ steps: "3" });
    expect(typeof wrong).toBe("function");
  });

  it("rejects result() with OxpToolCallError for a failed or cancelled call", async () => {
    const bound = bindAsyncTools<Tools>(createClient({ baseUrl: server.url }), toolIds);
    const failing = await bound["Work.Fails@1.0.0"]({});
    await expect(failing.result()).rejects.toMatchObject({
      constructor: OxpToolCallError,
      callId: failing.callId,
      error: { message: "No luck" },
    });
    // It waits for its first step, which the test never lets run: running until cancelled.
    const long = await bound["Work.Steps@1.0.0"]({ steps: 100, free: 0 });
    const status = await long.cancel();
    expect(status).toMatchObject({ status: "cancelled", result: { success: false } });
    await expect(long.result()).rejects.toMatchObject({
      constructor: OxpToolCallError,
      error: { message: "The call was cancelled", can_retry: false },
    });
  });

  it("passes waitSeconds on, and throws the call's checks as the synchronous binding does", async () => {
    const bound = bindAsyncTools<Tools>(createClient({ baseUrl: server.url }), toolIds);
    const quick = await bound["Work.Steps@1.0.0"]({ steps: 1 }, { waitSeconds: 5 });
    expect(quick.task).toBe(false);
    expect(await quick.result()).toEqual({ steps: 1 });
    await expect(bound["Work.Steps@1.0.0"]({ steps: 0 })).rejects.toBeInstanceOf(OxpValidationError);
  });

  it("makes a plain call on an OXP 1.0 server: a settled handle with the typed value", async () => {
    const bound = bindAsyncTools<Tools>(createClient({ baseUrl: plain.url }), toolIds);
    const call = await bound["Work.Steps@1.0.0"]({ steps: 2 });
    expect(call.task).toBe(false);
    expect(await collect(call.progress)).toEqual([]);
    expect(await call.result()).toEqual({ steps: 2 });
  });
});
