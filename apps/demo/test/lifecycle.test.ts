// docs/protocol.md 7 shutdown as a real process (npm start's dist/main.js), its settings from the environment, and the demo client script.
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect, it } from "vitest";
import { ADAPTER, callTool, send } from "./harness.js";

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist");
const children: ChildProcess[] = [];
afterEach(() => {
  for (const child of children.splice(0)) {
    child.kill("SIGKILL");
  }
});

/** Starts dist/main.js on an ephemeral port and resolves with its URL once it prints it. */
async function startProcess(
  env: Record<string, string> = {},
): Promise<{ child: ChildProcess; url: string; output: () => string }> {
  const child = spawn(process.execPath, [path.join(dist, "main.js")], {
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn", OXP_ADAPTER: ADAPTER, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  // The URL, once the process prints it; a process that exits first did not start. No time limit but the test's:
  // a busy machine starts Node slowly.
  const url = await new Promise<string>((resolve, reject) => {
    const read = (chunk: unknown) => {
      output += chunk;
      const listening = /listening on (http:\/\/\S+)/.exec(output)?.[1];
      if (listening) {
        resolve(listening);
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    child.once("exit", () => reject(new Error(`the demo did not start: ${output}`)));
  });
  return { child, url, output: () => output };
}

describe("the demo process", () => {
  verifies("limits.graceful-drain", "exits 0 on SIGTERM after finishing the call in flight", async () => {
    const { child, url } = await startProcess();
    // Listened for from the start: the process may exit while the test still reads the call's answer, and an
    // `exit` already emitted would never reach a listener added after it.
    const exited = once(child, "exit");
    const callId = `drain-${Date.now()}`;
    const inFlight = callTool(url, { tool_id: "System.Sleep", input: { ms: 2_000 }, call_id: callId });
    // The signal goes once the server runs the call. A fixed 50 ms pause raced the request on a busy machine: the
    // server, draining, closed a connection whose request it had not read yet (a new call, not one in flight).
    const status = `${url}/tools/calls/${encodeURIComponent(callId)}`;
    await until(
      async () => (await send(status, { headers: { "OXP-Extensions": "tasks" } })).body?.status === "running",
      { what: "the call to run" },
    );
    child.kill("SIGTERM");
    const finished = await inFlight;
    expect(finished.body).toMatchObject({ success: true });
    const [code] = await exited;
    expect(code).toBe(0);
  });

  it("takes its settings from the environment: API key and tool time limit", async () => {
    const { url } = await startProcess({ OXP_API_KEY: "env-key-123", OXP_TOOL_TIMEOUT_MS: "50" });
    expect((await send(`${url}/tools`)).status).toBe(401);
    const slow = await callTool(
      url,
      { tool_id: "System.Sleep", input: { ms: 1_000 } },
      { "OXP-API-Key": "env-key-123" },
    );
    expect(slow.body).toMatchObject({ success: false, error: { can_retry: true } });
  });

  it("passes the demo client script, which calls every tool", async () => {
    const { url } = await startProcess();
    const client = spawn(process.execPath, [path.join(dist, "client.js"), url], { stdio: ["ignore", "pipe", "pipe"] });
    children.push(client);
    let output = "";
    client.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    const [code] = await once(client, "exit");
    expect(output).not.toContain("FAIL");
    expect(output).toMatch(/^\d+ passed, 0 failed$/m);
    expect(code).toBe(0);
  });

  it("says in one line, without a stack, that its port is busy", async () => {
    const first = await startProcess();
    const busy = new URL(first.url).port;
    const second = spawn(process.execPath, [path.join(dist, "main.js")], {
      env: { ...process.env, PORT: busy, HOST: "127.0.0.1" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(second);
    let stderr = "";
    second.stderr?.on("data", (chunk) => {
      stderr += chunk;
    });
    const [code] = await once(second, "exit");
    expect(code).toBe(1);
    expect(stderr.trim()).toBe(
      `Port ${busy} on 127.0.0.1 is already in use: stop what runs there, or pick another, e.g. PORT=8081 npm start`,
    );
  });

  it("fails the client script against a server that is not there", async () => {
    const client = spawn(process.execPath, [path.join(dist, "client.js"), "http://127.0.0.1:9"], {
      stdio: ["ignore", "pipe", "pipe"],
    });
    children.push(client);
    const [code] = await once(client, "exit");
    expect(code).toBe(1);
  });
});
