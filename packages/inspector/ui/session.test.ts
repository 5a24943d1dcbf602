// The page's recording fetch under @otc/client's asynchronous calls, against a real @otc/server and a bare
// node:http event stream on loopback: every request in the history, masked; an event stream handed on as it comes
// and recorded once it ends, its head kept.
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { type Credentials, clientFor, type Exchange, HISTORY_BODY_BYTES, MASK, recordingFetch } from "./session.js";

const API_KEY = "session-test-key-7f3a9c21";

/** A gate Work.Walk waits at: `passed` resolves once the test calls `open`. */
function gate(): { passed: Promise<void>; open: () => void } {
  let open = () => {};
  const passed = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { passed, open };
}

/**
 * Where Work.Walk waits: until an event stream has opened (see {@link watched}), so that its 202 carries no progress
 * and its first comes over the stream; then, after that first, until the test has seen it, so that the stream is
 * still open when it does. Each test that walks takes new ones.
 */
let walkGates = { streamOpened: gate(), firstSeen: gate() };

// A walk ends with its test, whatever happened: one that failed at a gate leaves none behind.
afterEach(() => {
  walkGates.streamOpened.open();
  walkGates.firstSeen.open();
});

/** Takes four steps, reporting each, waiting at its gates (see {@link walkGates}): the test, not the clock, paces it. */
const walk = defineTool({
  toolkit: "Work",
  name: "Walk",
  version: "1.0.0",
  description: "Takes four short steps.",
  inputSchema: {},
  outputSchema: { type: "integer" },
  run: async (_input, context) => {
    const { streamOpened, firstSeen } = walkGates;
    await streamOpened.passed;
    for (let step = 1; step <= 4; step++) {
      context.progress({ progress: step, total: 4 });
      if (step === 1) {
        await firstSeen.passed;
      }
    }
    return 4;
  },
});

/** `app`, opening Work.Walk's first gate once it has written the first bytes of a call's event stream. */
function watched(app: Parameters<typeof listen>[0]): Parameters<typeof listen>[0] {
  const serve = (req: IncomingMessage, res: ServerResponse) => {
    if (/\/events$/.test(req.url ?? "")) {
      const write = res.write.bind(res) as (chunk: unknown, ...rest: unknown[]) => boolean;
      res.write = ((chunk: unknown, ...rest: unknown[]) => {
        const written = write(chunk, ...rest);
        walkGates.streamOpened.open();
        return written;
      }) as typeof res.write;
    }
    return app(req, res);
  };
  return Object.assign(serve, { oxp: app.oxp });
}

/** The event stream `write` makes, on every request; `hold` keeps it open once written. */
let stream: { write(res: ServerResponse): void; hold: boolean } = { write: () => {}, hold: false };

let server: RunningServer;
const raw = createHttpServer((_req, res) => {
  res.writeHead(200, { "content-type": "text/event-stream", "cache-control": "no-store" });
  stream.write(res);
  if (!stream.hold) {
    res.end();
  }
});
let rawUrl: string;

beforeAll(async () => {
  server = await listen(watched(createServer({ tools: [walk], logger: false, auth: { apiKeys: [API_KEY] } })), {
    port: 0,
  });
  await new Promise<void>((resolve) => raw.listen(0, "127.0.0.1", resolve));
  rawUrl = `http://127.0.0.1:${(raw.address() as AddressInfo).port}`;
});

afterAll(async () => {
  raw.closeAllConnections();
  await Promise.all([server?.close(), new Promise((resolve) => raw.close(resolve))]);
});

const credentials = (serverUrl: string): Credentials => ({
  serverUrl,
  apiKey: API_KEY,
  jwtSecret: "",
  jwtAudience: "",
  jwtSubject: "",
  accessToken: "",
});

describe("an asynchronous call through clientFor", () => {
  it("records each request, masked, the event stream once it ends, and asks no discovery again", async () => {
    const exchanges: Exchange[] = [];
    const client = clientFor(credentials(server.url), (exchange) => exchanges.push(exchange), ["tasks"]);
    walkGates = { streamOpened: gate(), firstSeen: gate() };
    const call = await client.callToolAsync({ tool_id: "Work.Walk", call_id: "walk-1", input: {} });
    expect(call.task).toBe(true);
    /** How many exchanges the history had as each progress came. */
    const recordedAtProgress: number[] = [];
    for await (const _progress of call.progress) {
      recordedAtProgress.push(exchanges.length);
      walkGates.firstSeen.open();
    }
    expect(await call.result()).toMatchObject({ success: true, value: 4 });
    // The stream's progress came while it was open: it was handed on as it came, recorded once it ended.
    expect(recordedAtProgress.length).toBeGreaterThanOrEqual(1);
    expect(recordedAtProgress[0]).toBe(1);
    expect(
      exchanges.map((exchange) => `${exchange.method} ${new URL(exchange.url).pathname} ${exchange.status}`),
    ).toEqual(["POST /tools/call 202", "GET /tools/calls/walk-1/events 200"]);
    expect(exchanges[1]?.responseBody).toMatch(/event: progress[\s\S]*event: result/);
    for (const exchange of exchanges) {
      expect(exchange.requestHeaders).toContainEqual(["oxp-api-key", MASK]);
      expect(exchange.requestHeaders).toContainEqual(["oxp-extensions", "tasks"]);
    }
    expect(JSON.stringify(exchanges)).not.toContain(API_KEY);
  });
});

describe("recordingFetch on an event stream", () => {
  it("keeps the first HISTORY_BODY_BYTES characters of a long one, and hands on all of it", async () => {
    const event = `data: ${"x".repeat(1_000)}\n\n`;
    stream = { write: (res) => res.write(event.repeat(300)), hold: false };
    const exchanges: Exchange[] = [];
    const response = await recordingFetch((exchange) => exchanges.push(exchange))(rawUrl);
    expect(await response.text()).toBe(event.repeat(300));
    expect(exchanges).toHaveLength(1);
    const body = exchanges[0]?.responseBody ?? "";
    expect(body.startsWith(event.repeat(3))).toBe(true);
    expect(body).toMatch(new RegExp(`\\n\\.\\.\\. \\(the history keeps the first ${HISTORY_BODY_BYTES} characters`));
    expect(body.length).toBeLessThan(HISTORY_BODY_BYTES + 200);
  });

  it("is recorded when its request is aborted, with what came before", async () => {
    stream = { write: (res) => res.write("event: progress\ndata: {}\n\n"), hold: true };
    const exchanges: Exchange[] = [];
    const controller = new AbortController();
    const response = await recordingFetch((exchange) => exchanges.push(exchange))(rawUrl, {
      signal: controller.signal,
    });
    const reader = (response.body as ReadableStream<Uint8Array>).getReader();
    expect(new TextDecoder().decode((await reader.read()).value)).toBe("event: progress\ndata: {}\n\n");
    expect(exchanges).toHaveLength(0);
    controller.abort();
    expect(exchanges.map((exchange) => [exchange.status, exchange.responseBody])).toEqual([
      [200, "event: progress\ndata: {}\n\n"],
    ]);
    await reader.read().catch(() => undefined);
  });
});
