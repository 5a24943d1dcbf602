// `otc call --async` and `otc calls` against real tool servers: progress lines and the live bar, Ctrl-C (in process
// and as a real SIGINT to a spawned otc) cancelling the call, calls get/cancel, and a server without the extension.
import { spawn } from "node:child_process";
import type { IncomingMessage, ServerResponse } from "node:http";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@otc/client";
import {
  type Clock,
  createHandler,
  defineTool,
  type HandlerOptions,
  listen,
  type OxpHandler,
  type RunningServer,
  systemClock,
} from "@otc/server/node";
import { StepGate } from "@otc/test-helpers/step-gate";
import type { CallProgress } from "@otc/types";
import { afterAll, afterEach, beforeAll, describe, expect, it, onTestFinished } from "vitest";
import { run } from "./cli.js";
import { EXIT, type Io } from "./io.js";
import { progressLine } from "./task-call.js";

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The call_ids whose tool saw its AbortSignal fire. */
const aborted = new Set<string>();

/** The steps of each call that the test has let run (the Work.Steps tool waits for the rest). */
const gate = new StepGate();
const allow = (callId: string, step?: number) => gate.allow(callId, step);

// A test's calls end with it, whatever it let them do: one that failed waiting for a step leaves none behind.
afterEach(() => gate.releaseAll());

/** Told when the run of a call starts, by call_id. */
const startWatchers = new Map<string, () => void>();

/** Resolves once the tool runs the call `callId`. */
const started = (callId: string) => new Promise<void>((resolve) => startWatchers.set(callId, resolve));

const steps = defineTool({
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
  run: async ({ steps: count, free = count }, context) => {
    context.signal.addEventListener("abort", () => aborted.add(context.callId), { once: true });
    startWatchers.get(context.callId)?.();
    for (let step = 1; step <= count; step++) {
      if (step > free) {
        await gate.stepAllowed(context.callId, step, context.signal);
      }
      context.progress({ progress: step, total: count, message: `step ${step}\u001b[2J` });
    }
    return { steps: count };
  },
});

/** Told of each progress event a server writes on a call's event stream, as it writes it, by call_id. */
const sentWatchers = new Map<string, Set<(progress: CallProgress) => void>>();

/** Tells `watcher` of each progress event written on the call's event streams; returns how to stop. */
function watchSent(callId: string, watcher: (progress: CallProgress) => void): () => void {
  const watchers = sentWatchers.get(callId) ?? new Set();
  sentWatchers.set(callId, watchers);
  watchers.add(watcher);
  return () => watchers.delete(watcher);
}

/** Resolves with the call's next progress event once a server has written it on an event stream. */
function nextSent(callId: string): Promise<CallProgress> {
  return new Promise((resolve) => {
    const stop = watchSent(callId, (progress) => {
      stop();
      resolve(progress);
    });
  });
}

/**
 * An `onStderr` for otc that steps the call: lets its first step run now, and each next one once otc has shown the
 * progress before it (` k/n ` on a line or a bar). None happens before the one before it was shown, so none can
 * supersede another unshown, however late a busy machine runs otc. (An otc that lost one would stall the call, and
 * the test would fail at the gate's time limit.)
 */
function stepOnShown(callId: string): (stderr: string) => void {
  allow(callId, 1);
  return (stderr) => {
    const shown = [...stderr.matchAll(/ (\d+)\/\d+ /g)].map((match) => Number(match[1]));
    allow(callId, Math.max(0, ...shown) + 1);
  };
}

/** `app`, telling {@link sentWatchers} of each progress event it writes on a call's event stream. */
function watched(app: OxpHandler): OxpHandler {
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    const segment = /^\/tools\/calls\/([^/?]+)\/events/.exec(req.url ?? "")?.[1];
    if (segment !== undefined) {
      const callId = decodeURIComponent(segment);
      const decoder = new TextDecoder();
      let text = "";
      const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
      res.write = ((chunk: unknown, ...rest: unknown[]) => {
        const written = write(chunk, ...rest);
        text += typeof chunk === "string" ? chunk : decoder.decode(chunk as Uint8Array, { stream: true });
        const events = text.split("\n\n");
        text = events.pop() ?? "";
        for (const event of events) {
          const data = /^data: (.*)$/m.exec(event)?.[1];
          if (/^event: progress$/m.test(event) && data !== undefined) {
            const progress = JSON.parse(data) as CallProgress;
            for (const watcher of [...(sentWatchers.get(callId) ?? [])]) {
              watcher(progress);
            }
          }
        }
        return written;
      }) as typeof res.write;
    }
    return app(req, res);
  };
  return Object.assign(serve, { oxp: app.oxp }) as OxpHandler;
}

/**
 * The real clock, watched: `timerSet(ms)` resolves when a server next sets a timer of `ms` on it, as it does once it
 * holds a long poll of that length. The test then knows the server waits, instead of guessing how long it takes.
 */
const { clock, timerSet } = (() => {
  const watchers = new Set<{ ms: number; resolve: () => void }>();
  const watchedClock: Clock = {
    now: () => systemClock.now(),
    setTimeout: (callback, ms) => {
      const timer = systemClock.setTimeout(callback, ms);
      for (const watcher of [...watchers]) {
        if (watcher.ms === ms) {
          watchers.delete(watcher);
          watcher.resolve();
        }
      }
      return timer;
    },
    clearTimeout: (timer) => systemClock.clearTimeout(timer),
  };
  return {
    clock: watchedClock,
    timerSet: (ms: number) => new Promise<void>((resolve) => watchers.add({ ms, resolve })),
  };
})();

const start = (options: Partial<HandlerOptions> = {}) =>
  listen(watched(createHandler({ tools: [steps], logger: false, progressPerSecond: 50, clock, ...options })), {
    port: 0,
  });

let server: RunningServer;
let plain: RunningServer;
beforeAll(async () => {
  [server, plain] = await Promise.all([start(), start({ extensions: false })]);
});
afterAll(() => Promise.all([server, plain].map((running) => running?.close())));

/** Runs `otc` in process with `extra` Io fields; `onStderr` sees stderr so far after each write. */
async function otc(args: string[], extra: Partial<Io> = {}, onStderr?: (text: string) => void) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
      onStderr?.(stderr);
    },
    env: {},
    ...extra,
  });
  return { code, stdout, stderr };
}

/** `--input` of a Work.Steps call of `count` steps, the first `free` of which run at once (by default all). */
const input = (count: number, free = count) => ["--input", JSON.stringify({ steps: count, free })];

describe("progressLine", () => {
  it.each([
    ["plain, with a total", { progress: 3, total: 4, message: "Copying" }, undefined, "progress: 3/4 (75%) Copying"],
    ["plain, without a total", { progress: 2.25 }, undefined, "progress: 2.3"],
    ["a bar", { progress: 3, total: 4 }, 80, "[##################------]  75% 3/4"],
    ["a bar past its total", { progress: 9, total: 4, message: "x" }, 80, "[########################] 100% 9/4 x"],
    ["no bar without a total", { progress: 7, message: "seven" }, 80, "7 seven"],
    [
      "cut to the terminal",
      { progress: 1, total: 2, message: "m".repeat(100) },
      40,
      `[############------------]  50% 1/2 mm…`,
    ],
    [
      "the message's first line, escaped",
      { progress: 1, message: "a\u001b[2J\nsecond" },
      undefined,
      "progress: 1 a\\u001b[2J",
    ],
  ])("%s", (_name, progress, columns, want) => {
    const line = progressLine(progress, columns);
    expect(line).toBe(want);
    if (columns !== undefined) {
      expect(line.length).toBeLessThan(columns);
    }
  });
});

describe("otc call --async", () => {
  it("prints a line per progress update on stderr, then the result as otc call does", async () => {
    // Each step waits until otc has shown the one before.
    const { code, stdout, stderr } = await otc(
      ["call", "Work.Steps", ...input(3, 0), "--async", "--call-id", "lines", "--url", server.url],
      {},
      stepOnShown("lines"),
    );
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(stdout)).toEqual({ steps: 3 });
    expect(stderr).toBe(
      "call lines is running on the server (Ctrl-C cancels it)\n" +
        "progress: 1/3 (33%) step 1\\u001b[2J\n" +
        "progress: 2/3 (66%) step 2\\u001b[2J\n" +
        "progress: 3/3 (100%) step 3\\u001b[2J\n",
    );
    const json = await otc(["call", "Work.Steps", ...input(2), "--async", "--json", "--url", server.url]);
    expect(JSON.parse(json.stdout)).toMatchObject({ success: true, value: { steps: 2 } });
  });

  it("draws one bar in place on a terminal, escaping the server's text but not its own", async () => {
    const { code, stderr } = await otc(
      ["call", "Work.Steps", ...input(3, 0), "--async", "--call-id", "bar", "--url", server.url],
      { terminal: { columns: 100 } },
      stepOnShown("bar"),
    );
    expect(code).toBe(EXIT.ok);
    const drawn = stderr.split("\n")[1] ?? "";
    expect(drawn.split("\r").filter(Boolean)).toEqual([
      "[########----------------]  33% 1/3 step 1\\u001b[2J\u001b[K",
      "[################--------]  66% 2/3 step 2\\u001b[2J\u001b[K",
      "[########################] 100% 3/3 step 3\\u001b[2J\u001b[K",
    ]);
    expect(stderr.endsWith("\u001b[K\n")).toBe(true);
  });

  it("cancels the call on the server at Ctrl-C, prints its status and exits 130", async () => {
    const interrupt = new AbortController();
    // One step runs; the call then waits for its second. Ctrl-C once its progress went out to otc.
    void nextSent("interrupted").then(() => interrupt.abort());
    const { code, stdout } = await otc(
      ["call", "Work.Steps", ...input(100, 1), "--async", "--call-id", "interrupted", "--url", server.url],
      { interrupt: interrupt.signal },
    );
    expect(code).toBe(EXIT.interrupted);
    expect(stdout).toBe("The call was cancelled.\n  call id: interrupted\n");
    expect(aborted.has("interrupted")).toBe(true);
    const status = await otc(["calls", "get", "interrupted", "--url", server.url]);
    expect(status.code).toBe(EXIT.ok);
    expect(JSON.parse(status.stdout)).toMatchObject({
      call_id: "interrupted",
      status: "cancelled",
      result: { success: false, error: { message: "The call was cancelled" } },
    });
  });

  it("with --json, prints the cancelled CallStatus", async () => {
    const interrupt = new AbortController();
    void nextSent("interrupted-json").then(() => interrupt.abort());
    const { code, stdout } = await otc(
      [
        "call",
        "Work.Steps",
        ...input(100, 1),
        "--async",
        "--json",
        "--call-id",
        "interrupted-json",
        "--url",
        server.url,
      ],
      { interrupt: interrupt.signal },
    );
    expect(code).toBe(EXIT.interrupted);
    expect(JSON.parse(stdout)).toMatchObject({ status: "cancelled", result: { success: false } });
  });

  it("cancels on a real SIGINT to the otc process", async () => {
    // Its first step runs; the call then waits for its second until cancelled.
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/main.ts", "call", "Work.Steps", ...input(200, 1), "--async", "--call-id", "sigint"],
      { cwd: packageDir, env: { PATH: process.env.PATH ?? "", OXP_URL: server.url }, stdio: "pipe" },
    );
    // Only a guard against a hang: a child that outlives its test is killed.
    onTestFinished(() => {
      child.kill("SIGKILL");
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (chunk) => {
      stdout += String(chunk);
    });
    const exited = new Promise<number | null>((resolve) => child.on("exit", (code) => resolve(code)));
    const progressing = new Promise<void>((resolve) => {
      child.stderr.on("data", (chunk) => {
        stderr += String(chunk);
        if (stderr.includes("progress: ")) {
          resolve();
        }
      });
    });
    // An otc that stops before its first progress line fails here, with what it said.
    await Promise.race([progressing, exited.then((code) => expect.fail(`otc exited ${code}: ${stderr}`))]);
    child.kill("SIGINT");
    const code = await exited;
    expect(code, `${stdout}${stderr}`).toBe(EXIT.interrupted);
    expect(stdout).toBe("The call was cancelled.\n  call id: sigint\n");
    const status = await createClient({ baseUrl: server.url }).callStatus("sigint");
    expect(status.status).toBe("cancelled");
    expect(aborted.has("sigint")).toBe(true);
  });

  it("makes a plain call to a server without the tasks extension, which Ctrl-C cannot cancel", async () => {
    const { code, stdout, stderr } = await otc(["call", "Work.Steps", ...input(2), "--async", "--url", plain.url]);
    expect({ code, stderr }).toEqual({ code: EXIT.ok, stderr: "" });
    expect(JSON.parse(stdout)).toEqual({ steps: 2 });
    // Ctrl-C once the server runs the call, whose steps wait for the test; they then run, and the call ends, which
    // otc, having stopped waiting, does not see.
    const interrupt = new AbortController();
    void started("plain-interrupted").then(() => {
      interrupt.abort();
      allow("plain-interrupted");
    });
    const interrupted = await otc(
      ["call", "Work.Steps", ...input(10, 0), "--async", "--call-id", "plain-interrupted", "--url", plain.url],
      { interrupt: interrupt.signal },
    );
    expect(interrupted).toEqual({
      code: EXIT.interrupted,
      stdout: "",
      stderr:
        "Interrupted: the server cannot cancel calls (it does not offer the tasks extension); the call may still run\n",
    });
  });
});

describe("otc calls", () => {
  it("get prints the status (waiting with --wait-seconds), cancel cancels", async () => {
    const client = createClient({ baseUrl: server.url });
    // Its steps wait for the test: running, without progress, until the server holds the long poll of otc calls get.
    const call = await client.callToolAsync({ tool_id: "Work.Steps", input: { steps: 100, free: 0 }, call_id: "c1" });
    const holding = timerSet(5_000);
    const getting = otc(["calls", "get", "c1", "--wait-seconds", "5", "--url", server.url]);
    await Promise.race([holding, getting]);
    allow("c1", 1);
    const got = await getting;
    expect(got.code).toBe(EXIT.ok);
    expect(JSON.parse(got.stdout)).toMatchObject({ call_id: "c1", status: "running", progress: { total: 100 } });
    const cancelled = await otc(["calls", "cancel", "c1", "--url", server.url]);
    expect(cancelled.code).toBe(EXIT.ok);
    expect(JSON.parse(cancelled.stdout)).toMatchObject({ call_id: "c1", status: "cancelled" });
    expect(await call.result()).toMatchObject({ success: false, error: { can_retry: false } });
  });

  it.each([
    [["calls"], "otc calls takes get or cancel and one call id"],
    [["calls", "list"], "otc calls takes get or cancel and one call id"],
    [["calls", "get", "a", "b"], "unexpected argument 'b'"],
    [["calls", "get", "a", "--wait-seconds", "31"], "--wait-seconds takes a whole number of seconds from 0 to 30"],
    [["calls", "cancel", "a", "--wait-seconds", "1"], "--wait-seconds takes a whole number"],
  ])("refuses %j (exit 2)", async (args, message) => {
    const { code, stderr } = await otc([...args, "--url", server.url]);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain(message);
  });

  it("says so for an unknown call (exit 5) and for a server without tasks (exit 5)", async () => {
    const unknown = await otc(["calls", "get", "never-was", "--url", server.url]);
    expect(unknown).toMatchObject({ code: EXIT.refused, stdout: "" });
    expect(unknown.stderr).toContain("No such call");
    const without = await otc(["calls", "cancel", "x", "--url", plain.url]);
    expect(without.code).toBe(EXIT.refused);
    expect(without.stderr).toContain("needs the tasks extension, which the server does not offer");
  });
});
