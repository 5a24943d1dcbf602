// The bridge in front of a hostile OXP server on loopback: a check_url or a redirect to another origin, a task's progress that goes back or breaks its schema, an endless answer.
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";
import { AUTHORIZATION_META_KEY, createMcpBridge, ERROR_META_KEY } from "@otc/mcp";
import { endlessToolList, json } from "@otc/test-helpers/hostile-server";
import { afterEach, describe, expect, it } from "vitest";
import { mcpClient, textOf } from "./harness.js";

const API_KEY = "bridge-key-for-the-oxp-server-only";

/** A loopback server answering with `handle`, recording each request's method, path and headers. */
async function rawServer(handle: (req: IncomingMessage, res: ServerResponse) => unknown) {
  const hits: { method: string; url: string; headers: IncomingMessage["headers"] }[] = [];
  const server = createServer(async (req, res) => {
    for await (const _chunk of req) {
    }
    hits.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    await handle(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  opened.push(close);
  return { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, hits };
}

const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((close) => close()));
});

const mailTool = {
  id: "Mail.Read@1.0.0",
  name: "Mail_Read",
  version: "1.0.0",
  description: "Reads mail.",
  input_schema: { type: "object", properties: {} },
  output_schema: null,
};

/** An MCP client that accepts every URL elicitation, connected in-process to a bridge for `url`. */
async function bridged(url: string, elicited: string[] = []) {
  const client = mcpClient(async (request) => {
    elicited.push((request.params as { url: string }).url);
    return { action: "accept" };
  });
  const bridge = createMcpBridge({ url, apiKey: API_KEY, authorizationPollMs: 10, authorizationWaitMs: 5_000 });
  const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
  await bridge.createServer().connect(serverSide);
  await client.connect(clientSide);
  opened.push(() => client.close());
  return client;
}

describe("the bridge and a hostile OXP server", () => {
  it("never polls a check_url on another origin: the user gets the link, that origin gets nothing", async () => {
    const elsewhere = await rawServer((_req, res) => json(res, 200, { status: "completed" }));
    const oxp = await rawServer((req, res) => {
      if (req.url === "/.well-known/oxp") {
        return json(res, 404, { message: "Not found" });
      }
      if (req.url === "/tools") {
        return json(res, 200, { items: [mailTool] });
      }
      return json(res, 400, {
        message: "Authorization required",
        missing_requirements: {
          authorization: [{ id: "google", url: `${elsewhere.url}/consent`, check_url: `${elsewhere.url}/status` }],
        },
      });
    });
    const elicited: string[] = [];
    const client = await bridged(oxp.url, elicited);
    const result = await client.callTool({ name: "Mail_Read", arguments: {} });
    expect(elicited).toEqual([`${elsewhere.url}/consent`]);
    expect(result.isError).toBe(true);
    expect(textOf(result)).toMatch(/^The tool needs an authorization\. Ask the user to open this link/);
    expect(result._meta?.[AUTHORIZATION_META_KEY]).toEqual([{ id: "google", url: `${elsewhere.url}/consent` }]);
    expect(elsewhere.hits).toEqual([]);
    // Discovery first (the bridge asks for annotations where they are offered): a 404 is an OXP 1.0 server.
    expect(oxp.hits.map((hit) => `${hit.method} ${hit.url}`)).toEqual([
      "GET /.well-known/oxp",
      "GET /tools",
      "POST /tools/call",
    ]);
  });

  it("does not follow a redirect to another origin, and says so without naming it", async () => {
    const elsewhere = await rawServer((_req, res) => json(res, 200, { items: [mailTool] }));
    const oxp = await rawServer((req, res) => {
      if (req.url === "/tools") {
        return json(res, 200, { items: [mailTool] });
      }
      return res.writeHead(307, { location: `${elsewhere.url}/tools/call` }).end();
    });
    const client = await bridged(oxp.url);
    const result = await client.callTool({ name: "Mail_Read", arguments: {} });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("The tool server sent the bridge to another server, which the bridge does not follow.");
    expect(result._meta?.[ERROR_META_KEY]).toEqual({ status: 307, can_retry: false });
    expect(textOf(result)).not.toContain(elsewhere.url);
    expect(elsewhere.hits).toEqual([]);
  });

  it("a task whose progress goes back, then breaks its schema: notifications only move on, then the protocol error", async () => {
    const event = (id: number, data: unknown) => `id: ${id}\nevent: progress\ndata: ${JSON.stringify(data)}\n\n`;
    const oxp = await rawServer((req, res) => {
      if (req.url === "/.well-known/oxp") {
        return json(res, 200, { oxp_versions: ["1.0"], extensions: ["tasks"] });
      }
      if (req.url === "/tools") {
        return json(res, 200, { items: [mailTool] });
      }
      if (req.method === "POST") {
        return json(res, 202, { call_id: "task-1", status: "running" });
      }
      res.writeHead(200, { "content-type": "text/event-stream" });
      res.write(event(1, { progress: 5, total: 10 }));
      res.write(event(2, { progress: 3, total: 10 }));
      res.write(event(3, { progress: 7, total: 10, message: "Nearly" }));
      // Over the protocol's 1,000 characters: not a CallProgress.
      res.end(event(4, { progress: 9, message: "x".repeat(5_000) }));
    });
    const client = await bridged(oxp.url);
    const progress: unknown[] = [];
    const result = await client.callTool({ name: "Mail_Read", arguments: {} }, undefined, {
      onprogress: (params) => progress.push(params),
    });
    // Events read in one go give the latest only: 7, perhaps after 5; never 3, never the broken one.
    const values = progress.map((params) => (params as { progress: number }).progress);
    expect([[7], [5, 7]]).toContainEqual(values);
    expect(progress.at(-1)).toEqual({ progress: 7, total: 10, message: "Nearly" });
    expect(result.isError).toBe(true);
    expect(textOf(result)).toBe("The tool server's answer did not follow the protocol.");
    expect(oxp.hits.map((hit) => `${hit.method} ${hit.url}`)).toEqual([
      "GET /.well-known/oxp",
      "GET /tools",
      "POST /tools/call",
      "GET /tools/calls/task-1/events",
    ]);
  });

  it("stops reading an endless tool list, and says it was too large", async () => {
    let written = 0;
    const oxp = await rawServer((_req, res) =>
      endlessToolList(res, 100 * 1024 * 1024, (total) => {
        written = total;
      }),
    );
    const client = await bridged(oxp.url);
    await expect(client.listTools()).rejects.toThrow("The tool server's answer was too large");
    expect(written).toBeLessThan(48 * 1024 * 1024);
  });
});
