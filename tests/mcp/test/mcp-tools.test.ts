// @modelcontextprotocol/server-everything (a real MCP server, over stdio) served as OXP tools by @otc/server, called with @otc/client and checked with the conformance kit.
import { existsSync } from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";
import type { JSONRPCMessage } from "@modelcontextprotocol/client";
import { createClient, type OxpClient, OxpValidationError } from "@otc/client";
import { type Fixture, runConformance, scenarios } from "@otc/conformance";
import { type McpTools, mcpTools } from "@otc/mcp";
import { createServer, listen, type RunningServer } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { until } from "@otc/test-helpers/until";
import type { CallProgress, CallToolResponse } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

/** The package's bin, where npm linked it: the nearest node_modules/.bin up from here. */
function everythingBin(): string {
  for (let dir = path.dirname(fileURLToPath(import.meta.url)); ; dir = path.dirname(dir)) {
    const bin = path.join(dir, "node_modules", ".bin", "mcp-server-everything");
    if (existsSync(bin)) {
      return bin;
    }
    if (path.dirname(dir) === dir) {
      throw new Error("mcp-server-everything is not installed");
    }
  }
}

const BLOCKED_URL = "http://blocked.invalid/file.txt";
/** What server-everything (pinned in package.json) answers for BLOCKED_URL, word for word: the tool error the bridge must pass on. */
const BLOCKED_MESSAGE =
  "Error processing file http://blocked.invalid/file.txt: Domain blocked.invalid is not in the allowed domains list.";
const API_KEY = "everything-over-oxp-key-0123456789";
const JWT_SECRET = "everything-over-oxp-jwt-secret-0123456789";

let everything: McpTools;
let server: RunningServer;
let client: OxpClient;
beforeAll(async () => {
  everything = await mcpTools(
    // `stdio` is the transport argument the server's launcher takes; only example.com may be fetched.
    { command: everythingBin(), args: ["stdio"], env: { GZIP_ALLOWED_DOMAINS: "example.com" }, stderr: "ignore" },
    { toolkit: "Everything", version: "1.0.0", timeoutMs: 3_000 },
  );
  const auth = { apiKeys: [API_KEY], jwt: { secret: JWT_SECRET } };
  server = await listen(createServer({ tools: everything.tools, auth, logger: false, validateResponses: true }), {
    port: 0,
  });
  client = createClient({ baseUrl: server.url, apiKey: API_KEY, retry: { maxAttempts: 1 } });
});
afterAll(async () => {
  await server?.close();
  await everything?.close();
});

/** The conformance kit's scenarios that must pass against server-everything served over OXP. */
const PASSING = [
  "health.ok",
  "health.no-auth",
  "headers.oxp-version",
  "errors.not-found",
  "errors.method-not-allowed",
  "tools.list",
  "tools.query-ignored",
  "tools.definitions",
  "version.header.accepted",
  "version.header.unsupported",
  "call.success",
  "call.call-id.generated",
  "call.unknown-tool",
  "call.version.unknown",
  "call.version.pattern",
  "call.input.invalid",
  "call.input.missing",
  "call.input.no-coercion",
  "call.request.extra-field",
  "call.order.tool-before-input",
  "call.tool-error",
  "call.timeout",
  "call.idempotency.replay",
  "call.idempotency.concurrent",
  "call.idempotency.conflict",
  "call.envelope",
  "call.envelope.errors",
  "auth.required",
  "auth.api-key",
  "auth.jwt.valid",
  "auth.jwt.refused",
  "auth.jwt.subject",
  "interop.health",
  "interop.list-tools",
  "interop.call",
  "interop.call-with-schema",
  "interop.errors",
  "interop.retry",
  "hostile.malformed-json",
  "hostile.wrong-types",
  "hostile.content-type",
  "hostile.too-large",
  "hostile.deep-nesting",
  "hostile.prototype-keys",
  "hostile.long-ids",
  "hostile.concurrent-garbage",
  "errors.no-leaks",
  "answers.schemas",
  "extensions.discovery",
  "extensions.off.list",
  "extensions.off.query",
  "extensions.off.unknown-ids",
  "extensions.off.task-paths",
  "extensions.negotiation",
  "extensions.applied-header",
  "extensions.vary",
  "extensions.annotations.listed",
  "extensions.pagination.pages",
  "extensions.pagination.limit",
  "extensions.pagination.cursor",
  "extensions.pagination.toolkit",
  "extensions.annotations.fixture",
  "search.discovery",
  "search.query",
  "search.pages",
  "search.view",
  "search.toolkit",
  "search.cursor",
  "search.exact-first",
  "search.deterministic",
  "search.bounds",
  "search.ids",
  "search.ids.refused",
  "search.toolkits",
  "search.toolkits.off",
  "search.off",
  "cache.etag",
  "cache.control",
  "cache.body-fields",
  "cache.no-store",
  "cache.tool-header",
  "tasks.respond-async",
  "tasks.respond-async.checks",
  "tasks.respond-async.wait",
  "tasks.respond-async.off",
  "tasks.status",
  "tasks.long-poll",
  "tasks.events",
  "tasks.events.resume",
  "tasks.cancel",
  "tasks.cancel.ended",
  "tasks.one-record",
  "tasks.principals",
  "tasks.unknown",
];

/** Those skipped: they need what an MCP server has no counterpart for (a tool without output, versions, user ids, secrets, authorizations). */
const SKIPPED = [
  "call.null-output",
  "call.version.exact",
  "call.version.shorthand",
  "call.version.latest",
  "requirements.user-id",
  "requirements.secret.missing",
  "requirements.secret.given",
  "requirements.authorization.token",
  "requirements.authorization.challenge",
  // An MCP server's tools have one version each: none is deprecated beside another.
  "search.deprecated",
  // The server runs without the oauth extension.
  ...scenarios.filter((scenario) => scenario.id.startsWith("oauth.")).map((scenario) => scenario.id),
  // Nor with connection providers.
  ...scenarios.filter((scenario) => scenario.id.startsWith("connections.")).map((scenario) => scenario.id),
];

describe("an MCP server's tools over OXP", () => {
  it("reads server-everything, a v1 SDK server, in a 2025 revision: the v2 client's probe found no 2026-07-28", () => {
    expect(everything.client.getProtocolEra()).toBe("legacy");
    expect(everything.client.getNegotiatedProtocolVersion()).toMatch(/^2025-\d\d-\d\d$/);
  });

  it("lists them as Toolkit.Tool@version, names in PascalCase, every top-level property described", async () => {
    const tools = await client.listTools();
    const ids = tools.map((tool) => tool.id);
    expect(ids).toEqual(expect.arrayContaining(["Everything.Echo@1.0.0", "Everything.GetSum@1.0.0"]));
    for (const id of ids) {
      expect(id).toMatch(/^Everything\.[A-Za-z0-9_]+@1\.0\.0$/);
    }
    expect(everything.names.get("Everything.GetSum@1.0.0")).toBe("get-sum");
    for (const tool of tools) {
      const schema = JSON.stringify(tool.input_schema);
      expect(schema).not.toMatch(/"\$ref"|"\$defs"|"definitions"/);
      for (const property of Object.values(tool.input_schema.properties ?? {})) {
        expect(typeof property.description).toBe("string");
      }
    }
    // A task-only tool cannot be called plainly: left out, with the reason.
    expect(everything.skipped.map((tool) => tool.name)).toContain("simulate-research-query");
    expect(ids).not.toContain("Everything.SimulateResearchQuery@1.0.0");
  });

  it("calls a tool: its text content is the value", async () => {
    const response = await client.callTool({ tool_id: "Everything.GetSum", input: { a: 2, b: 3 } });
    expect(response).toMatchObject({ success: true, value: "The sum of 2 and 3 is 5." });
  });

  it("calls a tool with an output schema: its structuredContent is the value, under that schema", async () => {
    const tools = await client.listTools();
    const weather = tools.find((tool) => tool.id === "Everything.GetStructuredContent@1.0.0");
    expect(weather?.output_schema).toMatchObject({ type: "object", properties: { temperature: { type: "number" } } });
    const response = await client.callTool({
      tool_id: "Everything.GetStructuredContent",
      input: { location: "Chicago" },
    });
    expect(response).toMatchObject({ success: true, value: { temperature: 36, conditions: "Light rain / drizzle" } });
  });

  it("passes non-text content through as the content blocks", async () => {
    const response = await client.callTool({ tool_id: "Everything.GetTinyImage", input: {} });
    expect(response.success).toBe(true);
    const blocks = (response.success ? response.value : []) as { type: string }[];
    expect(blocks.map((block) => block.type)).toContain("image");
  });

  it("turns an isError result into a tool error carrying its text", async () => {
    const response = await client.callTool({ tool_id: "Everything.GzipFileAsResource", input: { data: BLOCKED_URL } });
    expect(response).toMatchObject({ success: false, error: { message: BLOCKED_MESSAGE } });
  });

  it("checks input before the MCP server sees it (a 422 from the schema it declared)", async () => {
    await expect(client.callTool({ tool_id: "Everything.GetSum", input: { a: "x", b: 1 } })).rejects.toBeInstanceOf(
      OxpValidationError,
    );
  });

  it("aborts the MCP call at the tool's time limit", async () => {
    // An OXP server on a clock the test moves: the tool's time limit (3 s) passes when the test says, once the MCP
    // call is under way, not after 3 real seconds.
    const clock = new ManualClock();
    const timed = await listen(createServer({ tools: everything.tools, logger: false, clock }), { port: 0 });
    const mcpTransport = everything.client.transport;
    if (!mcpTransport) {
      throw new Error("the MCP client is not connected");
    }
    const sent: JSONRPCMessage[] = [];
    const send = mcpTransport.send.bind(mcpTransport);
    mcpTransport.send = (message, options) => {
      sent.push(message);
      return send(message, options);
    };
    let response: CallToolResponse;
    try {
      const calling = createClient({ baseUrl: timed.url, retry: { maxAttempts: 1 } }).callTool({
        tool_id: "Everything.TriggerLongRunningOperation",
        input: { duration: 30, steps: 3 },
      });
      const started = () => sent.some((message) => "method" in message && message.method === "tools/call");
      await until(started, { what: "the MCP call to be sent" });
      await clock.advance(3_000);
      response = await calling;
      // The MCP request was cancelled (notifications/cancelled), not left to run its 30 s.
      expect(sent.some((message) => "method" in message && message.method === "notifications/cancelled")).toBe(true);
    } finally {
      mcpTransport.send = send;
      await timed.close();
    }
    expect(response.success).toBe(false);
    if (!response.success) {
      expect(response.error.can_retry).toBe(true);
    }
    // The connection is still good after the cancellation.
    expect(await client.callTool({ tool_id: "Everything.Echo", input: { message: "still here" } })).toMatchObject({
      success: true,
      value: "Echo: still here",
    });
  });

  it("lists server-everything's titles and hints as OXP annotations, to a client that asks for them", async () => {
    const listed = await client.listTools({ annotations: true });
    const byId = new Map(listed.map((tool) => [tool.id, tool]));
    // As server-everything (pinned in package.json) declares them: every tool has a title and all four hints.
    expect(byId.get("Everything.GetSum@1.0.0")?.annotations).toEqual({
      title: "Get Sum Tool",
      read_only: true,
      destructive: false,
      idempotent: true,
      open_world: false,
    });
    expect(byId.get("Everything.GzipFileAsResource@1.0.0")?.annotations).toEqual({
      title: "GZip File as Resource Tool",
      read_only: false,
      destructive: false,
      idempotent: true,
      open_world: true,
    });
    expect(byId.get("Everything.ToggleSimulatedLogging@1.0.0")?.annotations).toMatchObject({
      read_only: false,
      idempotent: false,
    });
    for (const tool of listed) {
      expect(tool.annotations?.title).toEqual(expect.any(String));
      expect(tool).not.toHaveProperty("deprecation_message");
    }
    // Without the extension, an OXP 1.0 client sees none of it.
    expect((await client.listTools()).some((tool) => "annotations" in tool)).toBe(false);
  });

  it("runs the long-running operation asynchronously: its progress on the event stream, DELETE cancels the MCP request", async () => {
    const mcpTransport = everything.client.transport;
    if (!mcpTransport) {
      throw new Error("the MCP client is not connected");
    }
    // What the bridge sends to server-everything, to see the progress token and the cancellation on the wire.
    const sent: JSONRPCMessage[] = [];
    const send = mcpTransport.send.bind(mcpTransport);
    mcpTransport.send = (message, options) => {
      sent.push(message);
      return send(message, options);
    };
    const headers = { "OXP-API-Key": API_KEY, "OXP-Extensions": "tasks" };
    try {
      const accepted = await fetch(`${server.url}/tools/call`, {
        method: "POST",
        headers: { ...headers, Prefer: "respond-async", "content-type": "application/json" },
        // Six steps, one every half second: long enough to be cancelled in the middle.
        body: JSON.stringify({ tool_id: "Everything.TriggerLongRunningOperation", input: { duration: 3, steps: 6 } }),
      });
      expect(accepted.status).toBe(202);
      const { call_id: callId } = (await accepted.json()) as { call_id: string };
      const location = accepted.headers.get("location") as string;

      const stream = await fetch(`${location}/events`, { headers });
      expect(stream.headers.get("content-type")).toMatch(/^text\/event-stream/);
      const events = readEvents(stream);
      const progress: CallProgress[] = [];
      for (;;) {
        const event = await events.next();
        expect(event.done).toBe(false);
        if (event.value?.event === "progress") {
          progress.push(event.value.data as CallProgress);
        }
        if (progress.at(-1)?.progress === 2) {
          break;
        }
      }
      // server-everything's notifications/progress: step and total, no message.
      expect(progress.at(-1)).toEqual({ progress: 2, total: 6 });

      const cancelled = await fetch(location, { method: "DELETE", headers });
      expect(cancelled.status).toBe(200);
      expect(await cancelled.json()).toMatchObject({ call_id: callId, status: "cancelled" });
      let result: CallToolResponse | undefined;
      for await (const event of events) {
        if (event.event === "result") {
          result = event.data as CallToolResponse;
        }
      }
      expect(result).toMatchObject({ call_id: callId, success: false, error: { can_retry: false } });

      // On the MCP wire: the tools/call carried a progress token, and the DELETE became notifications/cancelled for it.
      const call = sent.find(
        (message) =>
          "method" in message &&
          message.method === "tools/call" &&
          message.params?.name === "trigger-long-running-operation",
      );
      expect(call && "params" in call ? call.params?._meta?.progressToken : undefined).toBeDefined();
      const cancellation = sent.find((message) => "method" in message && message.method === "notifications/cancelled");
      expect(cancellation && "params" in cancellation ? cancellation.params?.requestId : undefined).toBe(
        call && "id" in call ? call.id : "no call",
      );
    } finally {
      mcpTransport.send = send;
    }
    // The connection is still good after the cancellation.
    expect(await client.callTool({ tool_id: "Everything.Echo", input: { message: "still here" } })).toMatchObject({
      success: true,
      value: "Echo: still here",
    });
  });

  it("passes the conformance kit's scenarios that apply", async () => {
    const fixture: Fixture = {
      name: "server-everything",
      // A number in the input: the idempotency scenarios change it to make a different call.
      safeCall: { tool_id: "Everything.GetSum@1.0.0", input: { a: 20, b: 22 }, value: "The sum of 20 and 22 is 42." },
      toolError: {
        tool_id: "Everything.GzipFileAsResource",
        input: { data: BLOCKED_URL },
        // Known in advance, not taken from an earlier answer: a bridge that lost or changed the text must fail.
        error: { message: BLOCKED_MESSAGE },
      },
      // Its answer says whether it started or stopped: a second run would answer differently.
      idempotent: { tool_id: "Everything.ToggleSimulatedLogging", input: {} },
      // The waits' bounds only guard a hang: the kit goes on as soon as the call ends (past the tools' real 3 s
      // time limit for this one: the kit reaches the server over HTTP, and the scenario is its own).
      timeout: {
        tool_id: "Everything.TriggerLongRunningOperation",
        input: { duration: 30, steps: 3 },
        maxWaitMs: 60_000,
      },
      // About a second, a progress notification every 200 ms: the tasks extension's scenarios follow it.
      task: {
        tool_id: "Everything.TriggerLongRunningOperation@1.0.0",
        input: { duration: 1, steps: 5 },
        value: "Long running operation completed. Duration: 1 seconds, Steps: 5.",
        maxWaitMs: 60_000,
      },
      // server-everything's own hints and title, as the bridge lists them (docs/protocol.md 9.2).
      annotated: [
        {
          tool_id: "Everything.GetSum@1.0.0",
          annotations: {
            title: "Get Sum Tool",
            read_only: true,
            destructive: false,
            idempotent: true,
            open_world: false,
          },
        },
        {
          tool_id: "Everything.ToggleSimulatedLogging@1.0.0",
          annotations: {
            title: "Toggle Simulated Logging",
            read_only: false,
            destructive: false,
            idempotent: false,
            open_world: false,
          },
        },
      ],
    };
    const report = await runConformance({ url: server.url, fixture, apiKey: API_KEY, jwtSecret: JWT_SECRET });
    const failed = report.results.filter((result) => result.status === "fail");
    expect(failed.map((result) => `${result.id}: ${result.reason}`)).toEqual([]);
    // Every scenario by name: one that stops passing, or is skipped, or disappears, says which.
    const statuses = Object.fromEntries(report.results.map((result) => [result.id, result.status]));
    expect(statuses).toEqual({
      ...Object.fromEntries(PASSING.map((id) => [id, "pass"])),
      ...Object.fromEntries(SKIPPED.map((id) => [id, "skip"])),
    });
  });
});

/** The events of a `text/event-stream` answer as they come, `data` parsed as JSON; comment lines skipped. */
async function* readEvents(response: Response): AsyncGenerator<{ id?: string; event?: string; data: unknown }> {
  const decoder = new TextDecoder();
  let buffered = "";
  for await (const chunk of response.body as ReadableStream<Uint8Array>) {
    buffered += decoder.decode(chunk, { stream: true });
    for (let end = buffered.indexOf("\n\n"); end >= 0; end = buffered.indexOf("\n\n")) {
      const block = buffered.slice(0, end);
      buffered = buffered.slice(end + 2);
      const fields: Record<string, string> = {};
      for (const line of block.split("\n")) {
        const colon = line.indexOf(":");
        if (colon > 0) {
          fields[line.slice(0, colon)] = line.slice(colon + 1).trimStart();
        }
      }
      if (fields.data !== undefined) {
        yield { id: fields.id, event: fields.event, data: JSON.parse(fields.data) };
      }
    }
  }
}
