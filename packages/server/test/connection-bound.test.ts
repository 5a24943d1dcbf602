// docs/protocol.md 7, [limits.connection-allowances] at the server's bound (issue 34, F1): a few addresses holding every slot, with idle sockets or held calls, lock no newcomer out; real sockets from several loopback addresses.
import { once } from "node:events";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { afterEach, describe, expect } from "vitest";
import { defineTool, type ListenOptions, listen, type RunningServer, type Tool } from "../src/index.js";
import { makeServer } from "./harness.js";
import { testTools } from "./tools.js";

/** Linux routes all of 127.0.0.0/8 to loopback: each of these is a client address of its own. */
const FRESH = "127.0.0.1";
const [A, B, C, D] = ["127.0.0.2", "127.0.0.3", "127.0.0.4", "127.0.0.5"] as const;

/** A tool that holds its call until aborted: a request the server is working on. */
function holder(counts: { started: number; aborted: number }): Tool {
  return defineTool({
    toolkit: "Hold",
    name: "Wait",
    version: "1.0.0",
    description: "Holds its call until it is aborted.",
    inputSchema: { type: "object", properties: {}, additionalProperties: false },
    outputSchema: { type: "string" },
    run: (_input, { signal }) => {
      counts.started++;
      return new Promise<string>((_resolve, reject) => {
        signal.addEventListener(
          "abort",
          () => {
            counts.aborted++;
            reject(signal.reason);
          },
          { once: true },
        );
      });
    },
  }) as Tool;
}

interface Held {
  socket: Socket;
  from: string;
  closed: boolean;
}

const running: RunningServer[] = [];
const held: Held[] = [];
afterEach(async () => {
  for (const { socket } of held.splice(0)) {
    socket.destroy();
  }
  await Promise.all(running.splice(0).map((server) => server.close()));
});

/** Connections the server holds, as Node counts them (a closed one leaves once its close is read). */
const connections = (server: RunningServer) =>
  new Promise<number>((resolve, reject) =>
    server.server.getConnections((error, count) => (error ? reject(error) : resolve(count))),
  );

/**
 * A server of the test catalog and Hold.Wait, on a clock that never moves: every pending connection stays younger
 * than the allowances' one-second grace, so only the bound can close one.
 */
async function serve(listenOptions: ListenOptions) {
  const counts = { started: 0, aborted: 0 };
  const server = await listen(
    makeServer({ tools: [...testTools(), holder(counts)], logger: false, clock: new ManualClock() }),
    { ...listenOptions, port: 0 },
  );
  running.push(server);
  // The warm-up request's connection is gone before the test counts its own.
  await until(async () => (await connections(server)) === 0, { what: "the warm-up connection to close" });
  return { server, port: Number(new URL(server.url).port), counts };
}

/** Opens a connection from `from` and waits until the server holds it, so connections are admitted in order. */
async function hold(server: RunningServer, from: string, request?: string): Promise<Held> {
  const before = await connections(server);
  const socket = connect({ host: "127.0.0.1", port: Number(new URL(server.url).port), localAddress: from });
  const entry: Held = { socket, from, closed: false };
  held.push(entry);
  socket.on("error", () => {});
  socket.on("data", () => {});
  socket.once("close", () => {
    entry.closed = true;
  });
  await once(socket, "connect");
  if (request !== undefined) {
    socket.write(request);
  }
  await until(async () => (await connections(server)) > before, {
    what: `the server to take a connection from ${from}`,
  });
  return entry;
}

/** A whole POST of Hold.Wait, as a raw request. */
const HOLD_CALL = (() => {
  const body = JSON.stringify({ tool_id: "Hold.Wait", input: {} });
  return `POST /tools/call HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`;
})();

/** `GET /health` (or a call) on a connection of its own from `from`: its status, 0 when the connection was closed. */
function fresh(port: number, from: string, call?: unknown): Promise<number> {
  return new Promise((resolve) => {
    const payload = call === undefined ? undefined : JSON.stringify(call);
    const req = httpRequest(
      {
        host: "127.0.0.1",
        port,
        localAddress: from,
        agent: false,
        method: payload === undefined ? "GET" : "POST",
        path: payload === undefined ? "/health" : "/tools/call",
        headers: {
          connection: "close",
          ...(payload === undefined
            ? {}
            : { "content-type": "application/json", "content-length": Buffer.byteLength(payload) }),
        },
      },
      (res) => {
        res.resume();
        res.once("end", () => resolve(res.statusCode ?? 0));
        res.once("error", () => resolve(0));
      },
    );
    req.once("error", () => resolve(0));
    req.end(payload);
  });
}

/** Whether a held connection still works: a `GET /health` on it is answered 200. */
async function works({ socket }: Held): Promise<boolean> {
  let text = "";
  const answered = new Promise<void>((resolve) => {
    const onData = (chunk: Buffer) => {
      text += chunk.toString("latin1");
      if (/^HTTP\/1\.1 \d{3} [\s\S]*\r\n\r\n[\s\S]*\}/.test(text)) {
        socket.off("data", onData);
        resolve();
      }
    };
    socket.on("data", onData);
    socket.once("close", () => resolve());
  });
  socket.write("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
  await answered;
  return text.startsWith("HTTP/1.1 200 ");
}

/** Opens `count` connections from each address in turn: `[address, count]` pairs. */
async function fill(server: RunningServer, layout: [string, number][], request?: string): Promise<Held[]> {
  const opened: Held[] = [];
  for (const [from, count] of layout) {
    for (let i = 0; i < count; i++) {
      opened.push(await hold(server, from, request));
    }
  }
  return opened;
}

describe("a server full of idle connections from a few addresses", () => {
  verifies(
    "limits.connection-allowances",
    "serves a newcomer, closing the oldest pending connection of the address holding most, however young",
    async () => {
      const { server, port } = await serve({ maxConnections: 32 });
      // The burst (4 addresses x 256 idle sockets against 1,024), scaled down: 32 connections, none older
      // than a second, none having sent a byte.
      const idle = await fill(server, [
        [A, 11],
        [B, 7],
        [C, 7],
        [D, 7],
      ]);
      expect(await connections(server)).toBe(32);

      expect(await fresh(port, FRESH)).toBe(200);
      const oldestOfA = idle[0] as Held;
      await until(() => oldestOfA.closed, { what: "the oldest connection of the address holding most to close" });
      // Every other connection was left alone, and still works.
      for (const entry of idle.slice(1)) {
        expect(entry.closed, `a connection from ${entry.from}`).toBe(false);
        expect(await works(entry)).toBe(true);
      }
    },
  );
});

describe("a server full of held calls from a few addresses", () => {
  verifies(
    "limits.connection-allowances",
    "serves a newcomer from an address below its share, closing a connection of the address holding most",
    async () => {
      const { server, port, counts } = await serve({ maxConnections: 32 });
      // The 8 addresses x 128 held System.Sleep calls, scaled down: every connection is working on a call.
      const calls = await fill(
        server,
        [
          [A, 11],
          [B, 7],
          [C, 7],
          [D, 7],
        ],
        HOLD_CALL,
      );
      await until(() => counts.started === 32, { what: "the 32 calls to run" });

      expect(await fresh(port, FRESH, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } })).toBe(200);
      await until(() => calls.some((entry) => entry.closed), { what: "a held call's connection to close" });
      // Once more from the same address: the server is no longer full, so nobody else makes room.
      expect(await fresh(port, FRESH)).toBe(200);
      const closed = calls.filter((entry) => entry.closed);
      expect(closed.map((entry) => entry.from)).toEqual([A]);
    },
  );

  verifies(
    ["limits.connection-allowances", "limits.http-timeouts"],
    "closes a newcomer from an address holding as many as any, and serves one from an address holding none",
    async () => {
      const { server, port, counts } = await serve({ maxConnections: 32 });
      const calls = await fill(
        server,
        [
          [A, 8],
          [B, 8],
          [C, 8],
          [D, 8],
        ],
        HOLD_CALL,
      );
      await until(() => counts.started === 32, { what: "the 32 calls to run" });

      // A holds its share of a full server, every connection working: its newcomer goes, nobody else's.
      expect(await fresh(port, A)).toBe(0);
      // An address holding nothing is below its share: a connection of an address holding most makes room for it.
      expect(await fresh(port, FRESH)).toBe(200);
      await until(() => calls.some((entry) => entry.closed), { what: "a held call's connection to close" });
      expect(await fresh(port, FRESH)).toBe(200);
      expect(calls.filter((entry) => entry.closed)).toHaveLength(1);
    },
  );

  verifies(
    ["limits.connection-allowances", "limits.http-timeouts"],
    "from a single address, still closes the newcomer once every connection works on a request",
    async () => {
      const { server, port, counts } = await serve({ maxConnections: 4 });
      const calls = await fill(server, [[A, 4]], HOLD_CALL);
      await until(() => counts.started === 4, { what: "the 4 calls to run" });
      expect(await fresh(port, A)).toBe(0);
      // The address holds the whole server: a newcomer from anywhere else is below its share.
      expect(await fresh(port, FRESH)).toBe(200);
      await until(() => counts.aborted === 1, { what: "the closed connection's run to be aborted" });
      expect(calls.filter((entry) => entry.closed)).toHaveLength(1);
    },
  );
});
