// docs/protocol.md 7, [limits.connection-allowances]: slowloris from one address holds no slot a fresh client needs; real sockets on loopback, the attacker on 127.0.0.2.
import { once } from "node:events";
import { request as httpRequest } from "node:http";
import { connect, type Socket } from "node:net";
import { verifies } from "@otc/test-helpers/verifies";
import type { RequestHandler } from "express";
import { afterEach, describe, expect, it } from "vitest";
import type { PageHandler } from "../src/index.js";
import { type Running, startServer } from "./harness.js";

/** Linux routes all of 127.0.0.0/8 to loopback: each of these is a client address of its own. */
const ATTACKER = "127.0.0.2";
const OTHER = "127.0.0.3";
const VICTIM = "127.0.0.1";

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const portOf = (server: Running) => Number(new URL(server.baseUrl).port);

/** A raw connection from `localAddress`, once connected. */
async function open(port: number, localAddress: string): Promise<Socket> {
  const socket = connect({ host: "127.0.0.1", port, localAddress });
  socket.on("error", () => {});
  await once(socket, "connect");
  return socket;
}

/** `GET path` on a connection of its own from `localAddress`: its status (0 when the connection failed) and time. */
function get(
  port: number,
  localAddress: string,
  path = "/health",
  limitMs = 2_000,
): Promise<{ status: number; ms: number }> {
  const started = performance.now();
  return new Promise((resolve) => {
    const done = (status: number) => resolve({ status, ms: Math.round(performance.now() - started) });
    const req = httpRequest(
      { host: "127.0.0.1", port, path, localAddress, agent: false, headers: { connection: "close" } },
      (res) => {
        res.resume();
        res.once("end", () => done(res.statusCode ?? 0));
        res.once("error", () => done(0));
      },
    );
    req.setTimeout(limitMs, () => req.destroy());
    req.once("error", () => done(0));
    req.end();
  });
}

/** Whether the server closed a socket within `ms`. */
async function closedWithin(socket: Socket, ms: number): Promise<boolean> {
  if (socket.destroyed || socket.readableEnded) {
    return true;
  }
  return Promise.race([once(socket, "close").then(() => true), sleep(ms).then(() => false)]);
}

/**
 * `count` sockets from one address that never finish a request. `trickle`: each sends a request line,
 * then a header line every 200 ms, and is reopened 1 s after the server closes it. `idle`: each sends
 * nothing and is closed and reopened every second.
 */
class Slowloris {
  private readonly sockets = new Set<Socket>();
  private stopped = false;
  private ticker: NodeJS.Timeout | undefined;
  private readonly timers = new Set<NodeJS.Timeout>();
  /** Sockets the server closed. */
  closedByServer = 0;

  constructor(
    private readonly port: number,
    private readonly mode: "trickle" | "idle",
  ) {}

  async start(count: number): Promise<void> {
    if (this.mode === "trickle") {
      let line = 0;
      this.ticker = setInterval(() => {
        line++;
        for (const socket of this.sockets) {
          if (socket.writable) {
            socket.write(`X-Pad-${line}: 1\r\n`);
          }
        }
      }, 200);
    }
    // In batches, as an attacker's connect() calls would land.
    for (let opened = 0; opened < count; opened += 100) {
      await Promise.all(Array.from({ length: Math.min(100, count - opened) }, () => this.open()));
    }
  }

  private later(fn: () => void, ms: number): void {
    const timer = setTimeout(() => {
      this.timers.delete(timer);
      if (!this.stopped) {
        fn();
      }
    }, ms);
    this.timers.add(timer);
  }

  private open(): Promise<void> {
    return new Promise((resolve) => {
      const socket = connect({ host: "127.0.0.1", port: this.port, localAddress: ATTACKER });
      let ours = false;
      this.sockets.add(socket);
      socket.on("error", () => {});
      socket.once("connect", () => {
        if (this.mode === "trickle") {
          socket.write("GET /health HTTP/1.1\r\nHost: localhost\r\n");
        } else {
          this.later(() => {
            ours = true;
            socket.destroy();
          }, 1_000);
        }
        resolve();
      });
      socket.once("close", () => {
        this.sockets.delete(socket);
        resolve();
        if (this.stopped) {
          return;
        }
        if (ours) {
          this.later(() => void this.open(), 0);
        } else {
          this.closedByServer++;
          this.later(() => void this.open(), 1_000);
        }
      });
    });
  }

  stop(): void {
    this.stopped = true;
    clearInterval(this.ticker);
    for (const timer of this.timers) {
      clearTimeout(timer);
    }
    for (const socket of this.sockets) {
      socket.destroy();
    }
  }
}

describe("slowloris from one address", () => {
  let server: Running | undefined;
  let attack: Slowloris | undefined;
  afterEach(async () => {
    attack?.stop();
    await server?.close();
    server = attack = undefined;
  });

  verifies.each([
    ["trickling header bytes every 200 ms", "trickle"],
    ["idle, each reopened every second", "idle"],
  ] as const)(
    ["limits.connection-allowances", "limits.http-timeouts"],
    "1,100 sockets %s: fresh /health checks from any address are answered at once",
    {
      timeout: 30_000,
    },
    async (_label, mode) => {
      // The default connection limits. Headers may take 30 s, not 10: no attacking socket times out during
      // the test however slow the machine, so only the allowances can make room.
      server = await startServer({}, { headersTimeoutMs: 30_000 });
      const port = portOf(server);
      attack = new Slowloris(port, mode);
      await attack.start(1_100);
      // The kernel completes connections before the server takes them: let it take them all.
      await sleep(500);

      const checks: { from: string; status: number; ms: number }[] = [];
      for (let round = 0; round < 10; round++) {
        const answers = await Promise.all([get(port, VICTIM, "/health", 8_000), get(port, ATTACKER, "/health", 8_000)]);
        checks.push({ from: VICTIM, ...answers[0] }, { from: ATTACKER, ...answers[1] });
        await sleep(250);
      }
      // Every check answered, none near the 30 s a queued connection would wait; and at most one round slow: a
      // stall of the whole machine (seen in two local CI runs on Node 24 with every suite in parallel: both
      // addresses' checks of one round at 1.9 s, then past 2 s) slows a round, while an attack that held fresh
      // connections back slows every round.
      const failed = checks.filter((check) => check.status !== 200 || check.ms > 8_000);
      expect(failed, JSON.stringify(failed)).toEqual([]);
      const slowRounds = new Set(checks.flatMap((check, i) => (check.ms > 1_500 ? [Math.floor(i / 2)] : [])));
      expect(slowRounds.size, JSON.stringify(checks)).toBeLessThanOrEqual(1);
      // The attacker only recycled its own sockets.
      expect(attack.closedByServer).toBeGreaterThan(900);
    },
  );
});

describe("the per-address allowances", () => {
  const running: Running[] = [];
  const sockets: Socket[] = [];
  afterEach(async () => {
    for (const socket of sockets.splice(0)) {
      socket.destroy();
    }
    await Promise.all(running.splice(0).map((server) => server.close()));
  });
  const start = async (...args: Parameters<typeof startServer>) => {
    const server = await startServer(...args);
    running.push(server);
    return server;
  };
  const hold = async (port: number, from: string) => {
    const socket = await open(port, from);
    sockets.push(socket);
    // The server takes connections in the order they arrive: let it take this one before the next.
    await sleep(30);
    return socket;
  };

  verifies(
    "limits.connection-allowances",
    "closes a newcomer of an address whose every connection is working on a request, not others'",
    async () => {
      // A page that takes 1.5 s to answer: a whole request the server is working on.
      const slowPage: PageHandler = (req, res, next) => {
        if (req.url !== "/slow") {
          return next();
        }
        setTimeout(() => {
          res.writeHead(200, { "content-type": "application/json" });
          res.end("{}");
        }, 1_500);
      };
      const server = await start(
        { nodePages: [slowPage as unknown as RequestHandler] },
        { maxConnectionsPerAddress: 4 },
      );
      const port = portOf(server);
      const slow = Array.from({ length: 4 }, () => get(port, ATTACKER, "/slow", 5_000));
      await sleep(300);
      const fifth = await open(port, ATTACKER);
      sockets.push(fifth);
      expect(await closedWithin(fifth, 1_000)).toBe(true);
      expect(await get(port, VICTIM)).toMatchObject({ status: 200 });

      for (const reply of await Promise.all(slow)) {
        expect(reply.status).toBe(200);
      }
      expect(await get(port, ATTACKER)).toMatchObject({ status: 200 });
    },
  );

  verifies(
    "limits.connection-allowances",
    "makes room on an address by closing its oldest connection without a whole request, then the one idle longest",
    async () => {
      const server = await start({}, { maxPendingConnectionsPerAddress: 2 });
      const port = portOf(server);
      const elsewhere = await hold(port, OTHER);

      // A: one whole request answered, then idle on keep-alive. B: headers begun, never finished.
      const idleA = await hold(port, ATTACKER);
      await answered(idleA);
      const partial = await hold(port, ATTACKER);
      partial.write("GET /health HTTP/1.1\r\nHost: localhost\r\n");
      // Pending connections younger than a second are left alone (a burst of fresh ones is no attack).
      await sleep(1_100);

      // A third pending connection on the address: B goes, though A is older.
      const idleC = await hold(port, ATTACKER);
      expect(await closedWithin(partial, 1_000)).toBe(true);
      expect(await closedWithin(idleA, 100)).toBe(false);
      // Both left are idle between requests, for a second and more: the next newcomer closes A, idle longer.
      await answered(idleC);
      await sleep(1_100);
      await hold(port, ATTACKER);
      expect(await closedWithin(idleA, 1_000)).toBe(true);
      expect(await closedWithin(idleC, 100)).toBe(false);
      await answered(idleC);
      // Another address's pending connection was never touched.
      expect(await closedWithin(elsewhere, 50)).toBe(false);
    },
  );

  const answered = async (socket: Socket) => {
    socket.write("GET /health HTTP/1.1\r\nHost: localhost\r\n\r\n");
    const [chunk] = await once(socket, "data");
    expect(String(chunk)).toMatch(/^HTTP\/1\.1 200 /);
  };

  verifies(
    "limits.connection-allowances",
    "closes no connection of a busy keep-alive pool larger than the pending allowance",
    async () => {
      const server = await start({}, { maxPendingConnectionsPerAddress: 3 });
      const port = portOf(server);
      // undici opens ~100 connections for 50 requests at a time, each idle for a moment between two.
      const pool: Socket[] = [];
      for (let i = 0; i < 6; i++) {
        pool.push(await hold(port, ATTACKER));
      }
      const until = performance.now() + 1_300;
      while (performance.now() < until) {
        for (const socket of pool) {
          await answered(socket);
        }
      }
      // The pool is full and the client opens one more, as a pool does when every connection is busy.
      await hold(port, ATTACKER);
      for (const socket of pool) {
        expect(await closedWithin(socket, 20)).toBe(false);
        await answered(socket);
      }
    },
  );

  verifies(
    "limits.connection-allowances",
    "of idle connections, closes the one idle longest, not the one opened first that a keep-alive pool reuses",
    async () => {
      const server = await start({}, { maxPendingConnectionsPerAddress: 3 });
      const port = portOf(server);
      // A pool of four keep-alive connections, each answered once and idle for a second.
      const pool: Socket[] = [];
      for (let i = 0; i < 4; i++) {
        pool.push(await hold(port, ATTACKER));
        await answered(pool[i] as Socket);
      }
      await sleep(1_100);
      // As undici and Node's agent do, the pool goes on with the connection it opened first.
      await answered(pool[0] as Socket);

      // Three idle for a second fill the allowance: the newcomer closes the one idle longest.
      await hold(port, ATTACKER);
      expect(await closedWithin(pool[1] as Socket, 1_000)).toBe(true);
      for (const socket of [pool[0], pool[2], pool[3]] as Socket[]) {
        expect(await closedWithin(socket, 50)).toBe(false);
      }
      await answered(pool[0] as Socket);
    },
  );

  verifies(
    "limits.connection-allowances",
    "when pending connections fill the server's allowance, closes the oldest of the address holding most",
    async () => {
      const server = await start({}, { maxPendingConnections: 6, maxPendingConnectionsPerAddress: 100 });
      const port = portOf(server);
      const many = [];
      for (let i = 0; i < 4; i++) {
        many.push(await hold(port, ATTACKER));
      }
      const few = [await hold(port, OTHER), await hold(port, OTHER)];
      await sleep(1_100);

      await hold(port, "127.0.0.4");
      expect(await closedWithin(many[0] as Socket, 1_000)).toBe(true);
      for (const socket of [...many.slice(1), ...few]) {
        expect(await closedWithin(socket, 50)).toBe(false);
      }
      expect(await get(port, "127.0.0.5")).toMatchObject({ status: 200 });
    },
  );

  it("refuses allowances that are not positive integers", async () => {
    await expect(startServer({}, { maxPendingConnections: 0 })).rejects.toThrow(/maxPendingConnections/);
    await expect(startServer({}, { maxConnectionsPerAddress: 1.5 })).rejects.toThrow(/maxConnectionsPerAddress/);
  });
});
