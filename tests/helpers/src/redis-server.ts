// A real `redis-server` on a free loopback port, which a test can stop and start again on that port; npm test provisions it before the suites run.
import { type ChildProcess, spawn } from "node:child_process";
import { createConnection } from "node:net";
import { freePort } from "./free-port.js";
import { checkPeer, REDIS_SERVER } from "./peers.js";

/** A redis-server a test started. */
export interface RedisServer {
  /** `redis://127.0.0.1:<port>`. */
  url: string;
  port: number;
  /** Stops the server (its data goes: nothing is saved); the port stays this server's. */
  stop(): Promise<void>;
  /** Starts it again on the same port, after `stop`. */
  start(): Promise<void>;
  /** Stops it for good. */
  close(): Promise<void>;
}

// On import: a suite without its peer fails at once, naming the command that provisions it.
checkPeer(REDIS_SERVER);

/** True once the server answers PING with PONG. */
function pings(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = createConnection({ port, host: "127.0.0.1" });
    let reply = "";
    const done = (ok: boolean) => {
      socket.destroy();
      resolve(ok);
    };
    socket.setTimeout(500, () => done(false));
    socket.on("error", () => done(false));
    socket.on("connect", () => socket.write("PING\r\n"));
    socket.on("data", (chunk) => {
      reply += chunk.toString();
      if (reply.includes("\r\n")) {
        done(reply.startsWith("+PONG"));
      }
    });
  });
}

/** Starts redis-server on a free loopback port, persistence off, and waits until it answers. */
export async function startRedisServer(): Promise<RedisServer> {
  const command = REDIS_SERVER.binary;
  const port = await freePort();
  let child: ChildProcess | undefined;
  let output = "";

  const start = async () => {
    if (child) {
      throw new Error("redis-server is already running");
    }
    output = "";
    const started = spawn(
      command,
      ["--port", String(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no", "--loglevel", "warning"],
      { stdio: ["ignore", "pipe", "pipe"] },
    );
    child = started;
    started.stdout?.on("data", (chunk) => {
      output += chunk;
    });
    started.stderr?.on("data", (chunk) => {
      output += chunk;
    });
    const exited = new Promise<never>((_, reject) =>
      started.once("exit", (code) => reject(new Error(`redis-server exited (${code}) on port ${port}: ${output}`))),
    );
    exited.catch(() => {});
    const deadline = Date.now() + 10_000;
    while (!(await Promise.race([pings(port), exited]))) {
      if (Date.now() > deadline) {
        throw new Error(`redis-server did not answer on port ${port}: ${output}`);
      }
      await new Promise((resolve) => setTimeout(resolve, 20));
    }
  };

  const stop = async () => {
    const running = child;
    if (!running) {
      return;
    }
    child = undefined;
    if (running.exitCode !== null || running.signalCode !== null) {
      return;
    }
    const exited = new Promise((resolve) => running.once("exit", resolve));
    running.kill("SIGKILL");
    await exited;
  };

  await start();
  return { url: `redis://127.0.0.1:${port}`, port, start, stop, close: stop };
}
