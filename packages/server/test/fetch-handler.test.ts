// What only the fetch handler decides, called in-process with Request objects as Bun, Deno or workerd hand them over: the Host check without a local address, challenge links without publicUrl, bodies read as streams, clients that go away.
import { until } from "@otc/test-helpers/until";
import { describe, expect, it } from "vitest";
import { type CallEvent, createFetchHandler, type FetchHandlerOptions } from "../src/fetch.js";
import { TestAuthorizationProvider, testTools } from "./tools.js";

const handlerOf = (options: Partial<FetchHandlerOptions> = {}) =>
  createFetchHandler({ tools: testTools(), logger: false, fairness: false, ...options });

const call = (body: unknown, init: RequestInit = {}, url = "http://127.0.0.1:8787/tools/call") =>
  new Request(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: typeof body === "string" ? body : JSON.stringify(body),
    ...init,
  });

describe("the fetch handler's Host check", () => {
  it("refuses a rebound name from a loopback client, and lets any name through from elsewhere", async () => {
    const handler = handlerOf();
    const rebound = await handler(new Request("http://evil.example/tools"), { remoteAddress: "127.0.0.1" });
    expect(rebound.status).toBe(400);
    expect(rebound.headers.get("oxp-version")).toBe("1.0");
    expect(((await rebound.json()) as { message: string }).message).toMatch(/Host/);
    expect((await handler(new Request("http://localhost:8787/tools"), { remoteAddress: "127.0.0.1" })).status).toBe(
      200,
    );
    expect((await handler(new Request("http://evil.example/tools"), { remoteAddress: "192.0.2.9" })).status).toBe(200);
  });

  it("checks every request against a list, whoever sends it", async () => {
    const handler = handlerOf({ allowedHosts: ["tools.example.com"] });
    expect((await handler(new Request("http://evil.example/tools"))).status).toBe(400);
    expect((await handler(new Request("https://tools.example.com/tools"))).status).toBe(200);
  });
});

describe("the client's address, from the handler's second argument", () => {
  /** A handler that logs who failed to authenticate, and the `remote_address` of each such line. */
  const loggingHandler = () => {
    const addresses: unknown[] = [];
    const logger = {
      debug: () => {},
      info: () => {},
      error: () => {},
      warn: (fields: Record<string, unknown>, message?: string) => {
        if (message === "authentication failed") {
          addresses.push(fields.remote_address);
        }
      },
      child: () => logger,
    };
    return { handler: handlerOf({ logger, auth: { apiKeys: ["k-123"] } }), addresses };
  };
  const badKey = () => new Request("http://127.0.0.1:8787/tools", { headers: { "OXP-API-Key": "wrong" } });
  const throwing = new Proxy(
    {},
    {
      get() {
        throw new Error("no such binding");
      },
    },
  );

  it.each<[string, unknown, string | undefined]>([
    ["the explicit form", { remoteAddress: "192.0.2.9" }, "192.0.2.9"],
    [
      "Deno's ServeHandlerInfo",
      { remoteAddr: { transport: "tcp", hostname: "192.0.2.10", port: 50_000 }, completed: Promise.resolve() },
      "192.0.2.10",
    ],
    ["Deno's ServeHandlerInfo on IPv6", { remoteAddr: { transport: "tcp", hostname: "::1", port: 50_000 } }, "::1"],
    [
      "Deno's ServeHandlerInfo on a Unix socket",
      { remoteAddr: { transport: "unix", path: "/tmp/oxp.sock" } },
      undefined,
    ],
    [
      "Bun's Server",
      { port: 8787, requestIP: () => ({ address: "192.0.2.11", family: "IPv4", port: 50_000 }) },
      "192.0.2.11",
    ],
    ["Bun's Server once the socket is gone", { port: 8787, requestIP: () => null }, undefined],
    [
      "Bun's Server whose requestIP throws",
      {
        requestIP: () => {
          throw new Error("closed");
        },
      },
      undefined,
    ],
    ["Workers' env", { API_KEY: "k-123", REMOTE_ADDRESS: "192.0.2.12", remoteAddr: "192.0.2.12" }, undefined],
    ["an env whose requestIP is a value", { requestIP: "192.0.2.13" }, undefined],
    ["@hono/node-server's env", { incoming: { socket: { remoteAddress: "192.0.2.14" } }, outgoing: {} }, undefined],
    ["an object whose every property throws", throwing, undefined],
    ["nothing", undefined, undefined],
    ["null", null, undefined],
    ["a string", "192.0.2.15", undefined],
  ])("reads %s", async (_name, second, address) => {
    const { handler, addresses } = loggingHandler();
    const answer = await handler(badKey(), second as Parameters<typeof handler>[1]);
    expect(answer.status).toBe(401);
    expect(addresses).toEqual([address]);
  });

  it("asks Bun's Server about the request being answered", async () => {
    const { handler, addresses } = loggingHandler();
    const request = badKey();
    const asked: Request[] = [];
    const server = {
      requestIP(this: unknown, about: Request) {
        expect(this).toBe(server);
        asked.push(about);
        return { address: "::ffff:192.0.2.16", family: "IPv6", port: 50_000 };
      },
    };
    await handler(request, server);
    expect(asked).toEqual([request]);
    expect(addresses).toEqual(["::ffff:192.0.2.16"]);
  });

  it("turns the Host check on for a loopback client of Bun or Deno, as on node:http", async () => {
    const handler = handlerOf();
    const bun = { requestIP: () => ({ address: "127.0.0.1", family: "IPv4", port: 50_000 }) };
    const deno = { remoteAddr: { transport: "tcp", hostname: "::1", port: 50_000 } };
    for (const host of [bun, deno]) {
      expect((await handler(new Request("http://evil.example/tools"), host)).status).toBe(400);
      expect((await handler(new Request("http://localhost:8787/tools"), host)).status).toBe(200);
    }
  });

  it("counts anonymous Bun clients apart by their addresses: one over its share does not hold up another", async () => {
    const handler = handlerOf({ fairness: { share: 0.01, burstMs: 1, costlyCallMs: 0 } });
    const from = (address: string) => ({ requestIP: () => ({ address, family: "IPv4", port: 50_000 }) });
    const add = { tool_id: "Calculator.Add", input: { a: 1, b: 2 } };
    // Thousands of unknown input keys: a 422 that costs a millisecond or so to read and check, charged to its client.
    const costly = {
      ...add,
      input: { ...add.input, ...Object.fromEntries(Array.from({ length: 9_000 }, (_, i) => [`k${i}`, i])) },
    };
    // A first call warms the handler up (its cost would put whoever made it over the burst), then the other client
    // calls: the budget holds a client to its share only while others are served.
    await handler(call(add), from("192.0.2.22"));
    expect((await handler(call(add), from("192.0.2.21"))).status).toBe(200);
    const statuses: number[] = [];
    for (let i = 0; i < 100 && !statuses.includes(429); i++) {
      statuses.push((await handler(call(costly), from("192.0.2.20"))).status);
    }
    expect(statuses.at(-1)).toBe(429);
    expect((await handler(call(add), from("192.0.2.21"))).status).toBe(200);
  });
});

describe("challenge links on a fetch host", () => {
  const gmail = { tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "fetch-user" } };

  it("are built from publicUrl, whatever the request's Host", async () => {
    const handler = handlerOf({
      authorizationProviders: [new TestAuthorizationProvider()],
      publicUrl: "https://tools.example.com/",
    });
    const answer = (await (await handler(call(gmail, {}, "http://evil.example/tools/call"))).json()) as {
      missing_requirements?: { authorization?: { url: string; check_url: string }[] };
    };
    expect(answer.missing_requirements?.authorization?.[0]?.check_url).toMatch(/^https:\/\/tools\.example\.com\//);
  });

  it("are built from the request's URL only when it names an address, and otherwise refused as a configuration fault", async () => {
    const handler = handlerOf({ authorizationProviders: [new TestAuthorizationProvider()] });
    const byAddress = (await (await handler(call(gmail))).json()) as {
      missing_requirements?: { authorization?: { check_url: string }[] };
    };
    expect(byAddress.missing_requirements?.authorization?.[0]?.check_url).toMatch(/^http:\/\/127\.0\.0\.1:8787\//);
    const byName = await handler(call(gmail, {}, "http://tools.example.com/tools/call"));
    expect(byName.status).toBe(500);
    expect(await byName.text()).not.toContain("tools.example.com");
  });

  it("are not needed by a tool whose requirements start no challenge (a secret)", async () => {
    const handler = handlerOf({ secrets: { TWILIO_API_KEY: "test-secret" } });
    const sms = { tool_id: "SMS.Send", input: { to: "+15550100", message: "hi" } };
    const answer = await handler(call(sms, {}, "http://tools.example.com/tools/call"));
    expect(await answer.json()).toMatchObject({ success: true, value: { status: "sent" } });
  });
});

describe("bodies and clients", () => {
  /** A body of `chunks` pieces of 64 KiB (endless without), counting the pieces read and whether it was cancelled. */
  const countedBody = (chunks = Number.POSITIVE_INFINITY) => {
    const seen = { pulled: 0, cancelled: false };
    const piece = new TextEncoder().encode(`{"tool_id":"Calculator.Add","pad":"${"x".repeat(64 * 1024)}`);
    const stream = new ReadableStream<Uint8Array>({
      pull(controller) {
        seen.pulled++;
        controller.enqueue(piece);
        if (seen.pulled >= chunks) {
          controller.close();
        }
      },
      cancel() {
        seen.cancelled = true;
      },
    });
    return { seen, stream };
  };
  const streamed = (body: ReadableStream<Uint8Array>, headers: Record<string, string> = {}) =>
    new Request("http://127.0.0.1:8787/tools/call", {
      method: "POST",
      headers: { "content-type": "application/json", ...headers },
      body,
      duplex: "half",
    } as RequestInit);
  const EIGHT_MIB_IN_PIECES = (8 * 1024 * 1024) / (64 * 1024);

  it("refuses a streamed body past the limit with a 413, and drops the rest of it, never more than 8 MiB", async () => {
    const { seen, stream } = countedBody();
    const answer = await handlerOf({ bodyLimit: 1024 })(streamed(stream));
    expect(answer.status).toBe(413);
    // Read on past the refusal (so that a host closing the connection does not cut the answer off), then cancelled.
    expect(seen.pulled).toBeGreaterThan(EIGHT_MIB_IN_PIECES);
    expect(seen.pulled).toBeLessThanOrEqual(EIGHT_MIB_IN_PIECES + 3);
    expect(seen.cancelled).toBe(true);
  });

  it("reads a body declared past the limit to its end before answering 413, so the client can read the answer", async () => {
    // Bun and workerd close the connection as soon as an answer that says `Connection: close` is sent; a client
    // still writing its body then got EPIPE, never the 413.
    const { seen, stream } = countedBody(32);
    const answer = await handlerOf()(streamed(stream, { "content-length": String(32 * (64 * 1024 + 36)) }));
    expect(answer.status).toBe(413);
    expect(answer.headers.get("connection")).toBe("close");
    expect(seen).toEqual({ pulled: 32, cancelled: false });
  });

  it("answers a body declared past 8 MiB with a 413 at once, reading none of it", async () => {
    const { seen, stream } = countedBody();
    const answer = await handlerOf()(streamed(stream, { "content-length": String(64 * 1024 * 1024) }));
    expect(answer.status).toBe(413);
    // A stream is pulled once as it is made (its highWaterMark of 1): nothing past that was asked for.
    expect(seen.pulled).toBeLessThanOrEqual(1);
  });

  it("aborts a run without a call_id when the client goes away (the request's signal)", async () => {
    const events: CallEvent[] = [];
    let started = false;
    const handler = handlerOf({
      observer: { callStarted: () => (started = true), callEnded: (event) => events.push(event) },
    });
    const controller = new AbortController();
    const answered = handler(call({ tool_id: "System.Sleep", input: { ms: 10_000 } }, { signal: controller.signal }));
    // The client goes away once the call is running.
    await until(() => started, { what: "the call to start" });
    controller.abort();
    await answered;
    await until(() => events.length > 0, { what: "the call to end" });
    expect(events.map((event) => event.outcome)).toEqual(["disconnected"]);
  });

  it("answers HEAD with the headers and no body", async () => {
    const answer = await handlerOf()(new Request("http://127.0.0.1:8787/tools", { method: "HEAD" }));
    expect(answer.status).toBe(200);
    expect(answer.headers.get("etag")).toMatch(/^"/);
    expect(await answer.text()).toBe("");
  });
});
