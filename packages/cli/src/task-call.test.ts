// `otc call --async` and `otc calls` against real tool servers: progress lines and the live bar, Ctrl-C (in process
// and as a real SIGINT to a spawned otc) cancelling the call, calls get/cancel, and a server without the extension.
import { spawn } from "node:child_process";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@otc/client";
import { createHandler, defineTool, type HandlerOptions, listen, type RunningServer } from "@otc/server/node";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { run } from "./cli.js";
import { EXIT, type Io } from "./io.js";
import { progressLine } from "./task-call.js";

const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

/** The call_ids whose tool saw its AbortSignal fire. */
const aborted = new Set<string>();

const steps = defineTool({
  toolkit: "Work",
  name: "Steps",
  version: "1.0.0",
  description: "Takes `steps` steps of `ms` milliseconds, reporting each.",
  inputSchema: {
    type: "object",
    properties: {
      steps: { type: "integer", minimum: 1, maximum: 1000, description: "How many steps." },
      ms: { type: "integer", minimum: 0, maximum: 10000, description: "How long each step takes." },
    },
    required: ["steps", "ms"],
    additionalProperties: false,
  },
  outputSchema: { type: "object" },
  run: async ({ steps: count, ms }, context) => {
    for (let step = 1; step <= count; step++) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, ms);
        context.signal.addEventListener(
          "abort",
          () => {
            clearTimeout(timer);
            aborted.add(context.callId);
            reject(context.signal.reason);
          },
          { once: true },
        );
      });
      context.progress({ progress: step, total: count, message: `step ${step}\u001b[2J` });
    }
    return { steps: count };
  },
});

const start = (options: Partial<HandlerOptions> = {}) =>
  listen(createHandler({ tools: [steps], logger: false, progressPerSecond: 50, ...options }), { port: 0 });

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

const input = (count: number, ms: number) => ["--input", JSON.stringify({ steps: count, ms })];

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
    const { code, stdout, stderr } = await otc([
      "call",
      "Work.Steps",
      ...input(3, 150),
      "--async",
      "--call-id",
      "lines",
      "--url",
      server.url,
    ]);
    expect(code).toBe(EXIT.ok);
    expect(JSON.parse(stdout)).toEqual({ steps: 3 });
    expect(stderr).toBe(
      "call lines is running on the server (Ctrl-C cancels it)\n" +
        "progress: 1/3 (33%) step 1\\u001b[2J\n" +
        "progress: 2/3 (66%) step 2\\u001b[2J\n" +
        "progress: 3/3 (100%) step 3\\u001b[2J\n",
    );
    const json = await otc(["call", "Work.Steps", ...input(2, 20), "--async", "--json", "--url", server.url]);
    expect(JSON.parse(json.stdout)).toMatchObject({ success: true, value: { steps: 2 } });
  });

  it("draws one bar in place on a terminal, escaping the server's text but not its own", async () => {
    const { code, stderr } = await otc(["call", "Work.Steps", ...input(3, 150), "--async", "--url", server.url], {
      terminal: { columns: 100 },
    });
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
    const { code, stdout } = await otc(
      ["call", "Work.Steps", ...input(100, 50), "--async", "--call-id", "interrupted", "--url", server.url],
      { interrupt: interrupt.signal },
      (text) => {
        if (text.includes("progress: ")) {
          interrupt.abort();
        }
      },
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
    const { code, stdout } = await otc(
      ["call", "Work.Steps", ...input(100, 50), "--async", "--json", "--url", server.url],
      { interrupt: interrupt.signal },
      (text) => {
        if (text.includes("progress: ")) {
          interrupt.abort();
        }
      },
    );
    expect(code).toBe(EXIT.interrupted);
    expect(JSON.parse(stdout)).toMatchObject({ status: "cancelled", result: { success: false } });
  });

  it("cancels on a real SIGINT to the otc process", async () => {
    const child = spawn(
      process.execPath,
      ["--import", "tsx", "src/main.ts", "call", "Work.Steps", ...input(200, 50), "--async", "--call-id", "sigint"],
      { cwd: packageDir, env: { PATH: process.env.PATH ?? "", OXP_URL: server.url }, stdio: "pipe" },
    );
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
    const timer = setTimeout(() => child.kill("SIGKILL"), 15_000);
    const code = await exited;
    clearTimeout(timer);
    expect(code, `${stdout}${stderr}`).toBe(EXIT.interrupted);
    expect(stdout).toBe("The call was cancelled.\n  call id: sigint\n");
    const status = await createClient({ baseUrl: server.url }).callStatus("sigint");
    expect(status.status).toBe("cancelled");
    expect(aborted.has("sigint")).toBe(true);
  }, 30_000);

  it("makes a plain call to a server without the tasks extension, which Ctrl-C cannot cancel", async () => {
    const { code, stdout, stderr } = await otc(["call", "Work.Steps", ...input(2, 10), "--async", "--url", plain.url]);
    expect({ code, stderr }).toEqual({ code: EXIT.ok, stderr: "" });
    expect(JSON.parse(stdout)).toEqual({ steps: 2 });
    const interrupted = await otc(["call", "Work.Steps", ...input(10, 50), "--async", "--url", plain.url], {
      interrupt: AbortSignal.timeout(100),
    });
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
    const call = await client.callToolAsync({ tool_id: "Work.Steps", input: { steps: 100, ms: 50 }, call_id: "c1" });
    const got = await otc(["calls", "get", "c1", "--wait-seconds", "5", "--url", server.url]);
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
