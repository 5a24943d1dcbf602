// Fixes that had no test of their own, each replayed against a real server: a run refused at once frees its call_id; a standard output that is gone stops the logging, never the calls.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import { closeSync, openSync } from "node:fs";
import type { Readable } from "node:stream";
import { fileURLToPath } from "node:url";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MemoryIdempotencyStore } from "../src/index.js";
import { ADAPTER, callTool, expectError, type Reply, type Running, startServer } from "./harness.js";

describe("a run refused at once releases its call_id claim", () => {
  const store = new MemoryIdempotencyStore();
  let server: Running;
  beforeAll(async () => {
    // One run at a time: while System.Sleep runs, any other run is refused (503) before its tool starts.
    server = await startServer({ maxRunningCalls: 1, idempotencyStore: store, defaultTimeoutMs: 2_000 });
  });
  afterAll(() => server.close());

  verifies(
    ["limits.running-calls-bounded", "idempotency.what-is-stored"],
    "frees the call_id of a call refused at the running-calls bound, so its retry runs at once",
    async () => {
      const sleeping = callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: 800 } });
      // Refusals of a probe without a call_id say the sleep has started.
      const add = { tool_id: "Calculator.Add", input: { a: 1, b: 1 } };
      const deadline = Date.now() + 700;
      while ((await callTool(server.baseUrl, add)).status !== 503) {
        expect(Date.now(), "System.Sleep never started").toBeLessThan(deadline);
      }
      const call = { tool_id: "Counter.Increment", call_id: "refused-at-once", input: { by: 1 } };
      const before = server.counter.value;
      // The refusal is thrown by the run itself, synchronously: it must still reach the code that frees the claim.
      expectError(await callTool(server.baseUrl, call), 503);
      expect(server.counter.value).toBe(before);
      expect(await store.get({ principal: "anonymous", callId: "refused-at-once" })).toBeUndefined();

      expect((await sleeping).body).toMatchObject({ success: true, value: { slept_ms: 800 } });
      // A claim left held would make this retry wait for it to lapse: the tool's limit plus 5 s, 7 s here.
      const started = Date.now();
      const retry = await callTool(server.baseUrl, call);
      expect(Date.now() - started).toBeLessThan(5_000);
      expect(retry.body, retry.text).toMatchObject({
        success: true,
        call_id: "refused-at-once",
        value: { value: before + 1 },
      });
      expect(server.counter.value).toBe(before + 1);
    },
  );
});

describe("a standard output that is gone", () => {
  const packageDir = fileURLToPath(new URL("..", import.meta.url));
  const source = (file: string) => JSON.stringify(fileURLToPath(new URL(file, import.meta.url)));
  // A server of the test catalog with the default logger (JSON lines on standard output, in batches), on the
  // adapter under test; its URL goes to standard error, which stays open. tsx runs the TypeScript sources.
  const program = `
    const server = await import(${source("../src/index.ts")});
    const { testTools } = await import(${source("./tools.ts")});
    const create = ${JSON.stringify(ADAPTER)} === "node" ? server.createHandler : server.createServer;
    const { url } = await server.listen(create({ tools: testTools() }), { port: 0 });
    process.stderr.write(url + "\\n");
  `;
  const children: ChildProcess[] = [];
  afterAll(async () => {
    for (const child of children) {
      if (child.exitCode !== null || child.signalCode !== null) {
        continue;
      }
      child.kill("SIGKILL");
      await once(child, "exit");
    }
  });

  /** Starts the server with `stdout` as its standard output; resolves with the process, its URL and its standard error so far. */
  async function serve(stdout: "pipe" | number) {
    const child = spawn(process.execPath, ["--import", "tsx", "--input-type=module", "-e", program], {
      cwd: packageDir,
      env: { ...process.env, LOG_LEVEL: "info" },
      stdio: ["ignore", stdout, "pipe"],
    });
    children.push(child);
    const output = { stderr: "" };
    child.stderr?.setEncoding("utf8");
    const url = await new Promise<string>((resolve, reject) => {
      child.stderr?.on("data", (chunk: string) => {
        output.stderr += chunk;
        const line = /^(http:\/\/\S+)\n/m.exec(output.stderr)?.[1];
        if (line) {
          resolve(line);
        }
      });
      child.once("exit", (code) =>
        reject(new Error(`the server exited (${code}) before listening:\n${output.stderr}`)),
      );
    });
    return { child, url, output };
  }

  /** Many calls, enough for many 4 KiB batches each written while a call is answered; then the timer's flush. */
  async function expectCallsGoOn(child: ChildProcess, url: string, output: { stderr: string }) {
    const add = (a: number) => callTool(url, { tool_id: "Calculator.Add", input: { a, b: 1 } });
    const replies: Reply[] = [];
    for (let round = 0; round < 30; round++) {
      replies.push(...(await Promise.all(Array.from({ length: 10 }, (_, i) => add(round * 10 + i)))));
    }
    expect(replies.filter((reply) => reply.status !== 200).map((reply) => reply.text)).toEqual([]);
    expect(replies.every((reply, i) => reply.body.success === true && reply.body.value === i + 1)).toBe(true);
    // The flush every 250 ms meets the same standard output: the process must not die of it.
    // real time: the child's logger flushes on its own 250 ms timer, and only its death would show a failure.
    await new Promise((resolve) => setTimeout(resolve, 600));
    expect(child.exitCode, output.stderr).toBeNull();
    expect(child.signalCode, output.stderr).toBeNull();
    expect((await add(41)).body).toMatchObject({ success: true, value: 42 });
    expect(output.stderr).not.toMatch(/Error|EPIPE|ENOSPC/);
  }

  it("stops the logging, never the calls, when the reader of its pipe goes away", async () => {
    const { child, url, output } = await serve("pipe");
    // The first call's line arrives (within the logger's 250 ms flush); then the reader closes its end: EPIPE.
    const logged = once(child.stdout as Readable, "data");
    expect((await callTool(url, { tool_id: "Calculator.Add", input: { a: 0, b: 1 } })).body).toMatchObject({
      success: true,
      value: 1,
    });
    expect(String((await logged)[0])).toContain('"msg":"tool call"');
    child.stdout?.destroy();
    await expectCallsGoOn(child, url, output);
  });

  it("stops the logging, never the calls, when every write fails (ENOSPC on /dev/full)", async () => {
    // pino's destination turns EPIPE alone into silence; any other failed write reached the call that flushed.
    const full = openSync("/dev/full", "w");
    try {
      const { child, url, output } = await serve(full);
      await expectCallsGoOn(child, url, output);
    } finally {
      closeSync(full);
    }
  });
});
