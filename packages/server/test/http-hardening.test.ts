// docs/protocol.md 7 at the HTTP layer: JSON answers to what Node's parser refuses, timeouts, the connection cap, answered aborts at shutdown.
import { once } from "node:events";
import { connect, type Socket } from "node:net";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, expectSchema, type Running, send, startServer } from "./harness.js";

/** A raw answer read off a socket: the last response on it (after any 100 Continue), and when it came. */
interface RawReply {
  status: number;
  headers: Record<string, string>;
  body: string;
  /** Everything the server sent. */
  text: string;
  /** Milliseconds from the first byte sent to the connection's end. */
  elapsed: number;
}

function parseRaw(text: string, elapsed: number): RawReply {
  const responses = text.split(/(?=HTTP\/1\.1 \d{3} )/);
  const last = responses.at(-1) ?? "";
  const split = last.indexOf("\r\n\r\n");
  const [statusLine = "", ...headerLines] = (split < 0 ? last : last.slice(0, split)).split("\r\n");
  const headers: Record<string, string> = {};
  for (const line of headerLines) {
    const colon = line.indexOf(":");
    headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
  }
  return {
    status: Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine)?.[1] ?? 0),
    headers,
    body: split < 0 ? "" : last.slice(split + 4),
    text,
    elapsed,
  };
}

/** Opens a raw connection to the server. */
async function open(baseUrl: string): Promise<Socket> {
  const { port, hostname } = new URL(baseUrl);
  const socket = connect(Number(port), hostname);
  await once(socket, "connect");
  return socket;
}

/** Sends bytes as they are and reads until the server ends the connection (or `limitMs` passes). */
async function exchange(baseUrl: string, request: string | Buffer, limitMs = 5_000): Promise<RawReply> {
  const socket = await open(baseUrl);
  const started = Date.now();
  let text = "";
  socket.setEncoding("latin1");
  socket.on("data", (chunk: string) => {
    text += chunk;
  });
  socket.on("error", () => {});
  socket.write(request);
  // real time: a bound on a read that the tests expect the server to end; a test of a held connection reads to it.
  await Promise.race([once(socket, "end"), once(socket, "close"), new Promise((r) => setTimeout(r, limitMs))]);
  const elapsed = Date.now() - started;
  socket.destroy();
  return parseRaw(text, elapsed);
}

/** Asserts a raw answer is a closing JSON error of the given status: `{"message": string}`, OXP-Version, nothing leaked. */
function expectRawError(reply: RawReply, status: number): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers["content-type"]).toBe("application/json");
  expect(reply.headers["oxp-version"]).toBe("1.0");
  expect(reply.headers.connection).toBe("close");
  expect(Number(reply.headers["content-length"])).toBe(Buffer.byteLength(reply.body, "latin1"));
  const body = JSON.parse(reply.body);
  expect(Object.keys(body)).toEqual(["message"]);
  expect(typeof body.message).toBe("string");
  expectSchema("ServerErrorResponse", body);
  expect(reply.text).not.toMatch(/\n\s+at |node_modules|\/work\/|\.[jt]s:\d+|Error:/);
}

const get = (path: string, headers = "") => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`;

describe("what Node's HTTP parser refuses gets a JSON answer", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  it.each([
    ["a malformed request line", "G@T /health HTTP/1.1\r\nHost: localhost\r\n\r\n"],
    ["a request line that is not HTTP", "hello there\r\n\r\n"],
    ["a header name with a space", get("/health", "Bad Header: x\r\n")],
    [
      "a bad chunked body",
      "POST /tools/call HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\nzz\r\n",
    ],
  ])("400 for %s, echoing nothing", async (_name, request) => {
    const reply = await exchange(server.baseUrl, request);
    expectRawError(reply, 400);
    expect(reply.body).not.toMatch(/G@T|hello|Bad Header|zz/);
  });

  it.each([
    ["an HTTP/1.1 request without Host", "GET /health HTTP/1.1\r\nConnection: close\r\n\r\n"],
    ["two Host headers", "GET /health HTTP/1.1\r\nHost: a\r\nHost: evil.example\r\nConnection: close\r\n\r\n"],
  ])("400 JSON for %s (RFC 9112: exactly one Host)", async (_name, request) => {
    const reply = await exchange(server.baseUrl, request);
    expect(reply.status).toBe(400);
    expect(reply.headers["oxp-version"]).toBe("1.0");
    expect(JSON.parse(reply.body)).toMatchObject({ message: "The request must carry exactly one Host header" });
  });

  it("gives no second answer when the body of a request already answered turns out malformed", async () => {
    // POST /health: the app answers 405 before reading the body; the broken chunk comes after.
    const reply = await exchange(
      server.baseUrl,
      "POST /health HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n2\r\n{}x\r\n",
    );
    expect(reply.status).toBe(405);
    expect(reply.text.match(/HTTP\/1\.1 \d{3}/g)).toHaveLength(1);
  });

  verifies("limits.client-error-json", "431 for 1,500 headers (over Node's 16 KB of headers)", async () => {
    let headers = "";
    for (let i = 0; i < 1_500; i++) {
      headers += `X-Header-${String(i).padStart(4, "0")}: some value\r\n`;
    }
    expectRawError(await exchange(server.baseUrl, get("/health", headers)), 431);
  });

  it("passes 1,500 tiny headers that fit in 16 KB on to the app, which answers", async () => {
    let headers = "";
    for (let i = 0; i < 1_500; i++) {
      headers += `h${i}: v\r\n`;
    }
    const reply = await exchange(server.baseUrl, get("/health", `${headers}Connection: close\r\n`));
    expect(reply.status).toBe(200);
    expect(reply.headers["oxp-version"]).toBe("1.0");
  });

  verifies("limits.client-error-json", "431 for one 20 KB header", async () => {
    const reply = await exchange(server.baseUrl, get("/health", `X-Big: ${"a".repeat(20_000)}\r\n`));
    expectRawError(reply, 431);
  });

  verifies("limits.client-error-json", "417 for an expectation other than 100-continue", async () => {
    const reply = await exchange(
      server.baseUrl,
      "POST /tools/call HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 200-ok\r\nContent-Length: 2\r\n\r\n",
    );
    expectRawError(reply, 417);
  });

  it("still answers Expect: 100-continue with 100, then runs the call", async () => {
    const body = JSON.stringify({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } });
    const socket = await open(server.baseUrl);
    let text = "";
    socket.setEncoding("latin1");
    socket.on("data", (chunk: string) => {
      text += chunk;
    });
    socket.write(
      `POST /tools/call HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nExpect: 100-continue\r\nConnection: close\r\nContent-Length: ${body.length}\r\n\r\n`,
    );
    while (!text.includes("\r\n\r\n")) {
      await once(socket, "data");
    }
    expect(text).toMatch(/^HTTP\/1\.1 100 Continue\r\n/);
    socket.write(body);
    await once(socket, "end");
    socket.destroy();
    const reply = parseRaw(text, 0);
    expect(reply.status).toBe(200);
    expect(JSON.parse(reply.body)).toMatchObject({ success: true, value: 3 });
  });

  verifies("limits.client-error-json", "405 with Allow for CONNECT, instead of a silent close", async () => {
    const reply = await exchange(server.baseUrl, "CONNECT example.com:443 HTTP/1.1\r\nHost: example.com:443\r\n\r\n");
    expectRawError(reply, 405);
    expect(reply.headers.allow).toBe("GET, HEAD, POST");
  });

  it("treats an Upgrade request as a plain request (Node 20 does, with no upgrade listener)", async () => {
    const reply = await exchange(
      server.baseUrl,
      get("/health", "Connection: Upgrade, close\r\nUpgrade: websocket\r\nSec-WebSocket-Version: 13\r\n"),
    );
    expect(reply.status).toBe(200);
    expect(reply.headers["oxp-version"]).toBe("1.0");
    expect((await send(`${server.baseUrl}/health`)).status).toBe(200);
  });

  it("leaves no request counted in flight once those connections are gone", async () => {
    const lifecycle = server.app.oxp.lifecycle;
    await until(() => lifecycle.inFlight === 0, { what: "no request in flight" });
    expect(lifecycle.inFlight).toBe(0);
  });
});

describe.concurrent("time limits on receiving a request", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startServer({}, { headersTimeoutMs: 500, requestTimeoutMs: 1_000 });
  });
  afterAll(() => server.close());

  verifies(
    ["limits.http-timeouts", "limits.client-error-json"],
    "408 for a body that never finishes, soon after requestTimeoutMs",
    async () => {
      const reply = await exchange(
        server.baseUrl,
        'POST /tools/call HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 100\r\n\r\n{"tool_id":',
      );
      expectRawError(reply, 408);
      expect(reply.elapsed).toBeGreaterThanOrEqual(900);
      // Node looks for expired requests every connectionsCheckingInterval (30 s unless set): far sooner than that.
      expect(reply.elapsed).toBeLessThan(10_000);
    },
  );

  verifies("limits.http-timeouts", "408 for headers that never finish, soon after headersTimeoutMs", async () => {
    const reply = await exchange(server.baseUrl, "GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: 1\r\n");
    expectRawError(reply, 408);
    expect(reply.elapsed).toBeGreaterThanOrEqual(400);
    // Node looks for expired requests every connectionsCheckingInterval (30 s unless set): far sooner than that.
    expect(reply.elapsed).toBeLessThan(10_000);
  });

  it("refuses headersTimeoutMs over requestTimeoutMs", async () => {
    await expect(startServer({}, { headersTimeoutMs: 2_000, requestTimeoutMs: 1_000 })).rejects.toThrow(
      /headersTimeoutMs must not exceed requestTimeoutMs/,
    );
  });
});

describe("a long path in a 404", () => {
  verifies(
    ["limits.quoted-strings", "endpoints.unknown-route"],
    "quotes a 12,000-character path cut to 64 characters with the marker",
    async () => {
      const server = await startServer();
      try {
        const path = `/${"a".repeat(12_000)}`;
        const reply = await send(`${server.baseUrl}${path}`);
        expect(reply.status).toBe(404);
        expect(reply.headers.get("oxp-version")).toBe("1.0");
        expect(reply.text.length).toBeLessThan(300);
        expect(reply.body.developer_message).toBe(
          `Nothing is served at GET ${path.slice(0, 64)}...(11937 more characters).`,
        );
      } finally {
        await server.close();
      }
    },
  );
});

describe("the connection cap", () => {
  verifies(
    ["limits.http-timeouts", "limits.connection-allowances"],
    "at 5 connections held, closes one for a 6th, however young, and the others still work",
    async () => {
      // Pending connections may fill the cap here: the newcomer meets the cap itself, not the pending allowances
      // (slowloris.slow.test.ts). At the cap the server, not Node, decides which connection goes (a newcomer whose
      // address's every connection works on a request: connection-bound.test.ts).
      const server = await startServer({}, { maxConnections: 5, maxPendingConnections: 5 });
      const held: Socket[] = [];
      try {
        const closed = new Set<Socket>();
        for (let i = 0; i < 5; i++) {
          const socket = await open(server.baseUrl);
          socket.on("error", () => {});
          socket.once("close", () => closed.add(socket));
          held.push(socket);
        }
        const sixth = await exchange(server.baseUrl, get("/health", "Connection: close\r\n"), 2_000);
        expect(sixth.status).toBe(200);
        await until(() => closed.size > 0, { what: "a held connection to close" });
        expect(closed.size).toBe(1);

        // The 4 other held connections still work.
        for (const socket of held.filter((one) => !closed.has(one))) {
          let text = "";
          socket.setEncoding("latin1");
          socket.on("data", (chunk: string) => {
            text += chunk;
          });
          socket.write(get("/health"));
          while (!text.includes("}")) {
            await once(socket, "data");
          }
          expect(parseRaw(text, 0).status).toBe(200);
        }
      } finally {
        for (const socket of held) {
          socket.destroy();
        }
        await server.close();
      }
    },
  );
});

describe("shutdown past the drain deadline", () => {
  verifies(
    "limits.drain-answers-every-caller",
    "answers a call still running with a retryable failure, and aborts the tool",
    async () => {
      const server = await startServer({}, { drainTimeoutMs: 200 });
      const call = callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: 10_000 } });
      await until(() => server.app.oxp.lifecycle.inFlight > 0, { what: "the tool to run" });
      const started = Date.now();
      await server.close();
      // Closed by aborting the run, not by waiting for the 10 s sleep: half of it bounds a busy machine's slowness.
      expect(Date.now() - started).toBeLessThan(5_000);

      const reply = await call;
      expect(reply.status).toBe(200);
      expect(reply.headers.get("oxp-version")).toBe("1.0");
      expectSchema("CallToolResponse", reply.body);
      expect(reply.body).toMatchObject({
        success: false,
        error: { message: "The server is shutting down", can_retry: true },
      });
      // System.Sleep logs its signal's abort.
      expect(server.logs().some((line) => line.msg === "sleep aborted")).toBe(true);
    },
  );
});
