// mcpTools over stdio when the MCP server misbehaves: a failed start leaves no process behind; a server that dies turns calls into retryable tool errors.
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createClient } from "@otc/client";
import { createServer, listen, type RunningServer } from "@otc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type McpTools, mcpTools } from "../src/mcp-tools.js";

const fixture = fileURLToPath(new URL("./fixtures/stdio-server.mjs", import.meta.url));
const dir = mkdtempSync(path.join(tmpdir(), "otc-mcp-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const alive = (pid: number) => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe("a stdio MCP server that fails to start", () => {
  it.each([
    ["legacy", 1],
    // The probe's process too, which the SDK ends once it answered the probe (as a 2025 server, "Method not found").
    ["auto", 2],
  ] as const)(
    "is gone once mcpTools rejects (%s negotiation), even when it ignores the end of its stdin",
    async (versionNegotiation, processes) => {
      const pidFile = path.join(dir, `bad-version-${versionNegotiation}.pid`);
      const started = mcpTools(
        { command: process.execPath, args: [fixture, "bad-version"], env: { PID_FILE: pidFile }, stderr: "ignore" },
        { toolkit: "Old", version: "1.0.0", versionNegotiation },
      );
      await expect(started).rejects.toThrow(/protocol version is not supported/);
      const pids = readFileSync(pidFile, "utf8").trim().split("\n").map(Number);
      expect(pids).toHaveLength(processes);
      for (const pid of pids) {
        expect(pid).toBeGreaterThan(0);
        expect(alive(pid)).toBe(false);
      }
    },
  );

  it("a command that does not exist is refused", async () => {
    await expect(
      mcpTools({ command: path.join(dir, "no-such-server") }, { toolkit: "Nope", version: "1.0.0" }),
    ).rejects.toThrow(/ENOENT/);
  });
});

describe("a stdio MCP server whose process dies", () => {
  let crashy: McpTools;
  let server: RunningServer;
  beforeAll(async () => {
    // A 2025 server (the v1 SDK's): `legacy` starts its process once. Under `auto` the SDK's probe starts it a second
    // time first: two node starts loading the SDK, 0.8 s against 0.35 s on a quiet machine, which a busy one
    // stretched past this hook's old 10 s limit.
    crashy = await mcpTools(
      { command: process.execPath, args: [fixture, "crash"], stderr: "ignore" },
      { toolkit: "Crashy", version: "1.0.0", versionNegotiation: "legacy" },
    );
    server = await listen(createServer({ tools: crashy.tools, logger: false, validateResponses: true }), { port: 0 });
  });
  afterAll(async () => {
    await server?.close();
    await crashy?.close();
  });

  it("fails the call it dies in, and every later one, as tool errors the caller may retry", async () => {
    const client = createClient({ baseUrl: server.url, retry: { maxAttempts: 1 } });
    expect(await client.callTool({ tool_id: "Crashy.Echo", input: { text: "hi" } })).toMatchObject({
      success: true,
      value: "hi",
    });

    const died = await client.callTool({ tool_id: "Crashy.Crash", input: {} });
    expect(died.success).toBe(false);
    if (!died.success) {
      expect(died.error.can_retry).toBe(true);
      expect(died.error.message).toMatch(/MCP server behind this tool is not running/);
    }
    await crashy.closed;

    const after = await client.callTool({ tool_id: "Crashy.Echo", input: { text: "again" } });
    expect(after.success).toBe(false);
    if (!after.success) {
      expect(after.error.can_retry).toBe(true);
      expect(after.error.message).toMatch(/not running/);
    }
  });
});
