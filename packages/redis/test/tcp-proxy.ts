/** Test helper: a TCP proxy on a loopback port in front of a redis-server, which can hold back SUBSCRIBE commands on their way to Redis, and slow connections down. */
import { createConnection, createServer, type Socket } from "node:net";

/** A proxy a test started. */
export interface TcpProxy {
  /** `redis://127.0.0.1:<port>`: connections made to it reach the redis-server behind. */
  url: string;
  /**
   * From now on, holds every chunk a client sends that carries a SUBSCRIBE (and whatever that
   * connection sends after it) until {@link releaseSubscribes}. Resolves when the first is held.
   */
  holdSubscribes(): Promise<void>;
  /** Sends on what was held, and stops holding. */
  releaseSubscribes(): void;
  /**
   * Delays by `ms` (0: no more) each chunk Redis sends to a connection that has subscribed, in order:
   * pub/sub messages and replies on the subscriber then arrive late, as on a slow network.
   */
  delaySubscriberReplies(ms: number): void;
  /**
   * Delays by `ms` (0: no more) each chunk sent either way on a connection that has not subscribed, in order: a
   * command reaches Redis `ms` after it is sent, and its reply comes back `ms` after Redis sent it.
   */
  delayCommands(ms: number): void;
  close(): Promise<void>;
}

/**
 * Writes chunks to `socket` each `ms` after it was given (a link's latency, not its bandwidth: chunks given at once
 * arrive at once), in the order given even when `ms` changes.
 */
function latency(socket: Socket): { send(chunk: Buffer, ms: number): void } {
  let lastAt = 0;
  let waiting = 0;
  return {
    send(chunk, ms) {
      if (ms <= 0 && waiting === 0) {
        socket.write(chunk);
        return;
      }
      const at = Math.max(Date.now() + ms, lastAt);
      lastAt = at;
      waiting++;
      setTimeout(() => {
        waiting--;
        if (!socket.destroyed) {
          socket.write(chunk);
        }
      }, at - Date.now());
    },
  };
}

/** Starts a proxy on a free loopback port to `redisPort`. */
export async function startTcpProxy(redisPort: number): Promise<TcpProxy> {
  let holding = false;
  let held: (() => void)[] = [];
  let onHeld: (() => void) | undefined;
  let replyDelayMs = 0;
  let commandDelayMs = 0;
  const sockets = new Set<Socket>();

  const server = createServer((client) => {
    const upstream = createConnection({ port: redisPort, host: "127.0.0.1" });
    sockets.add(client);
    sockets.add(upstream);
    let blocked = false;
    let subscribed = false;
    let delivered = Promise.resolve();
    const toRedis = latency(upstream);
    const toClient = latency(client);
    client.on("data", (chunk: Buffer) => {
      if (/\r\nsubscribe\r\n/i.test(chunk.toString("latin1"))) {
        subscribed = true;
      }
      // RESP sends the command name as a bulk string: "$9\r\nsubscribe\r\n" (any case).
      if (holding && (blocked || /\r\nsubscribe\r\n/i.test(chunk.toString("latin1")))) {
        blocked = true;
        held.push(() => upstream.write(chunk));
        onHeld?.();
        return;
      }
      toRedis.send(chunk, subscribed ? 0 : commandDelayMs);
    });
    upstream.on("data", (chunk: Buffer) => {
      if (!subscribed) {
        toClient.send(chunk, commandDelayMs);
        return;
      }
      const delay = replyDelayMs;
      // Chained, so chunks keep their order even when the delay changes.
      delivered = delivered.then(async () => {
        if (delay > 0) {
          await new Promise((resolve) => setTimeout(resolve, delay));
        }
        if (!client.destroyed) {
          client.write(chunk);
        }
      });
    });
    const end = () => {
      client.destroy();
      upstream.destroy();
      sockets.delete(client);
      sockets.delete(upstream);
    };
    client.on("close", end);
    upstream.on("close", end);
    client.on("error", end);
    upstream.on("error", end);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const address = server.address();
  const port = typeof address === "object" && address ? address.port : 0;

  return {
    url: `redis://127.0.0.1:${port}`,
    holdSubscribes: () => {
      holding = true;
      return new Promise<void>((resolve) => {
        onHeld = () => {
          onHeld = undefined;
          resolve();
        };
      });
    },
    releaseSubscribes: () => {
      holding = false;
      const sends = held;
      held = [];
      for (const send of sends) {
        send();
      }
    },
    delaySubscriberReplies: (ms) => {
      replyDelayMs = ms;
    },
    delayCommands: (ms) => {
      commandDelayMs = ms;
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) {
          socket.destroy();
        }
        server.close(() => resolve());
      }),
  };
}
