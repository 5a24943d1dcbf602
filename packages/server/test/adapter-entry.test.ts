// @otc/server/adapter: an adapter of a stranger's own, built from the exported pipeline alone, serves the protocol.
import { once } from "node:events";
import { createServer, type IncomingMessage } from "node:http";
import type { AddressInfo } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bodyTooLarge, createPipeline, type Exchange } from "../src/adapter.js";
import { testTools } from "./tools.js";

/** The smallest honest Exchange over node:http: what the interface asks of every host, nothing more. */
function exchangeOf(req: IncomingMessage, base: string): Exchange {
  const url = new URL(req.url ?? "/", base);
  const header = (name: string) => {
    const value = req.headers[name];
    return Array.isArray(value) ? value[0] : value;
  };
  return {
    method: req.method ?? "GET",
    path: url.pathname,
    query: () => url.search.slice(1),
    header,
    headers: () => req.headers as Record<string, string | undefined>,
    localAddress: req.socket.localAddress,
    remoteAddress: req.socket.remoteAddress,
    baseUrl: () => base,
    async readText(limit, _declared, inspect) {
      let text = "";
      let bytes = 0;
      for await (const chunk of req) {
        bytes += (chunk as Buffer).length;
        if (bytes > limit) {
          throw bodyTooLarge(limit);
        }
        const piece = (chunk as Buffer).toString("utf8");
        inspect(piece, false);
        text += piece;
      }
      return text;
    },
    watchClient(onGone) {
      req.socket.once("close", onGone);
      return () => req.socket.off("close", onGone);
    },
    toRequest: () => new Request(url, { method: req.method, headers: req.headers as Record<string, string> }),
  };
}

describe("@otc/server/adapter", () => {
  const pipeline = createPipeline({ tools: testTools(), logger: false });
  const server = createServer(async (req, res) => {
    const { port } = server.address() as AddressInfo;
    const answer = await pipeline.handle(exchangeOf(req, `http://127.0.0.1:${port}`));
    if (!answer) {
      return;
    }
    if (answer.response) {
      res.writeHead(answer.status, { ...Object.fromEntries(answer.response.headers), ...answer.headers });
      res.end(Buffer.from(await answer.response.arrayBuffer()));
      return;
    }
    res.writeHead(answer.status, answer.headers);
    res.end(answer.body);
  });
  let baseUrl = "";

  beforeAll(async () => {
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    baseUrl = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });
  afterAll(() => new Promise<void>((resolve) => server.close(() => resolve())));

  it("serves the tool list, a call and the protocol's refusals through a host's own Exchange", async () => {
    const list = await fetch(`${baseUrl}/tools`, { headers: { "OXP-Version": "1.0" } });
    expect(list.status).toBe(200);
    expect(list.headers.get("etag")).toMatch(/^"/);
    const { items } = (await list.json()) as { items: { id: string }[] };
    expect(items.map((tool) => tool.id)).toContain("Calculator.Add@1.0.0");
    const call = await fetch(`${baseUrl}/tools/call`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "OXP-Version": "1.0" },
      body: JSON.stringify({ tool_id: "Calculator.Add", input: { a: 2, b: 3 } }),
    });
    expect(await call.json()).toMatchObject({ success: true, value: 5 });
    const invalid = await fetch(`${baseUrl}/tools/call`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "OXP-Version": "1.0" },
      body: JSON.stringify({ tool_id: "Calculator.Add", input: { a: "two" } }),
    });
    expect(invalid.status).toBe(422);
    expect(await invalid.json()).toMatchObject({ message: "Some input parameters are invalid" });
    const tooLarge = await fetch(`${baseUrl}/tools/call`, {
      method: "POST",
      headers: { "Content-Type": "application/json", "OXP-Version": "1.0" },
      body: JSON.stringify({ tool_id: "Calculator.Add", input: { a: 1, b: 2, pad: "x".repeat(2 * 1024 * 1024) } }),
    });
    expect(tooLarge.status).toBe(413);
    expect(pipeline.runtime.lifecycle.inFlight).toBe(0);
  });
});
