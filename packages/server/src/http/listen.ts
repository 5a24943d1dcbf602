/** Runs an OXP app on a port with graceful shutdown (docs/protocol.md 7): 503 on /health, drain, exit. */
import { once } from "node:events";
import {
  createServer as createHttpServer,
  get as httpGet,
  type IncomingMessage,
  type RequestListener,
  type Server,
  STATUS_CODES,
} from "node:http";
import type { AddressInfo, Socket } from "node:net";
import type { Duplex } from "node:stream";
import { OXP_VERSION } from "@otc/types";
import { ServerConfigError } from "../core/errors.js";
import { ConnectionAllowances } from "./connection-allowances.js";
import type { OxpRuntime } from "./options.js";

/** Options of {@link listen}. */
export interface ListenOptions {
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** How long shutdown waits for calls in flight before aborting them, in ms. Default 10,000. */
  drainTimeoutMs?: number;
  /** Shut down and exit 0 on SIGTERM and SIGINT. Default false (a library should not own the process). */
  handleSignals?: boolean;
  /** How long a client may take to send a request's headers before a 408, in ms (0: no limit). Default 10,000, capped at `requestTimeoutMs`. */
  headersTimeoutMs?: number;
  /** How long a client may take to send a whole request, body included, before a 408, in ms (0: no limit). Default 30,000. */
  requestTimeoutMs?: number;
  /**
   * Connections open at once. At the bound a newcomer takes the slot of the oldest pending connection of
   * the address holding most (whatever its age), else of a connection of the address holding most when
   * that address holds more than the newcomer's; else the newcomer is closed (docs/protocol.md 7).
   * Default 1,024.
   */
  maxConnections?: number;
  /**
   * Connections one client address (an IPv6 /64) may hold at once. Past it, its oldest pending
   * connection is closed for the newcomer; when all of them are working on requests, the newcomer is.
   * Default 256. Behind a reverse proxy every connection comes from the proxy: raise it to `maxConnections`.
   */
  maxConnectionsPerAddress?: number;
  /**
   * Pending connections (that have not sent a whole request yet, or sit idle between requests) held at
   * once, all addresses together. Past it, the oldest pending connection of the address holding most is
   * closed for the newcomer. Default half of `maxConnections` (512), so requests always find room.
   */
  maxPendingConnections?: number;
  /** Pending connections one address may hold at once; past it, its own oldest is closed for the newcomer. Default 64. */
  maxPendingConnectionsPerAddress?: number;
  /**
   * The runtime (`oxpApp.oxp`) of the OXP app mounted inside `app`, when `app` is a host app of your
   * own: its lifecycle is what start-up and shutdown drive. Not needed when `app` is the OXP app itself.
   */
  oxp?: OxpRuntime;
}

/** A running server. */
export interface RunningServer {
  /** `http://host:port`, the host in brackets when it is IPv6. */
  url: string;
  server: Server;
  /** Stops taking connections, lets calls in flight finish (bounded), answers the rest, then closes everything. */
  close(): Promise<void>;
}

/** After the drain deadline: how long aborted calls get to produce and flush their answers. */
const ABORT_GRACE_MS = 1_000;
/** How long a socket answered with an error stays open so the client can read the answer. */
const LINGER_MS = 1_000;

/** Status and fixed message of an error Node's HTTP parser (or its timeouts) raised, by error code. */
function clientErrorAnswer(code: string | undefined): { status: number; message: string } {
  switch (code) {
    case "HPE_HEADER_OVERFLOW":
      return { status: 431, message: "The request headers are too large" };
    case "HPE_CHUNK_EXTENSIONS_OVERFLOW":
      return { status: 413, message: "The request's chunk extensions are too large" };
    case "ERR_HTTP_REQUEST_TIMEOUT":
      return { status: 408, message: "The request took too long to arrive" };
    default:
      return { status: 400, message: "The request is not valid HTTP" };
  }
}

/** A whole HTTP/1.1 error answer, for sockets no ServerResponse will write to. */
function rawAnswer(status: number, message: string, headers: Record<string, string> = {}): string {
  const body = JSON.stringify({ message });
  const lines = [
    `HTTP/1.1 ${status} ${STATUS_CODES[status] ?? "Error"}`,
    "Content-Type: application/json",
    `OXP-Version: ${OXP_VERSION}`,
    ...Object.entries(headers).map(([name, value]) => `${name}: ${value}`),
    "Connection: close",
    `Content-Length: ${Buffer.byteLength(body)}`,
  ];
  return `${lines.join("\r\n")}\r\n\r\n${body}`;
}

function countOption(name: string, value: number | undefined, fallback: number): number {
  const count = value ?? fallback;
  if (!(Number.isInteger(count) && count > 0)) {
    throw new RangeError(`${name} must be a positive integer`);
  }
  return count;
}

function timeoutOption(name: string, value: number | undefined, fallback: number): number {
  const ms = value ?? fallback;
  if (!(Number.isFinite(ms) && ms >= 0)) {
    throw new RangeError(`${name} must be a number of milliseconds, 0 or more`);
  }
  return ms;
}

const LAST_REQUEST = Symbol("oxp.lastRequest");
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/**
 * Listens, warms the contract validator up (so the first call is not slow), and wires graceful
 * shutdown. `/health` answers 503 until warm and again once shutdown begins. Errors Node answers
 * itself (malformed requests, oversized headers, timeouts, `Expect`, `CONNECT`) get JSON answers with
 * `OXP-Version` too.
 *
 * @example
 * const { url, close } = await listen(createServer({ tools }), { port: 8080, handleSignals: true });
 */
export async function listen(
  app: RequestListener & { readonly oxp?: OxpRuntime },
  options: ListenOptions = {},
): Promise<RunningServer> {
  const runtime = options.oxp ?? app.oxp;
  if (!runtime) {
    throw new ServerConfigError("listen() needs an app made by createServer, or options.oxp naming the one mounted");
  }
  const { lifecycle } = runtime;
  const requestTimeout = timeoutOption("requestTimeoutMs", options.requestTimeoutMs, 30_000);
  const headersTimeout = timeoutOption(
    "headersTimeoutMs",
    options.headersTimeoutMs,
    requestTimeout > 0 ? Math.min(10_000, requestTimeout) : 10_000,
  );
  if (requestTimeout > 0 && headersTimeout > requestTimeout) {
    throw new RangeError("headersTimeoutMs must not exceed requestTimeoutMs: the headers are part of the request");
  }
  const maxConnections = options.maxConnections ?? 1_024;
  if (!(Number.isInteger(maxConnections) && maxConnections > 0)) {
    throw new RangeError("maxConnections must be a positive integer");
  }
  const allowances = new ConnectionAllowances(
    {
      total: maxConnections,
      perAddress: countOption("maxConnectionsPerAddress", options.maxConnectionsPerAddress, 256),
      pending: countOption("maxPendingConnections", options.maxPendingConnections, Math.ceil(maxConnections / 2)),
      pendingPerAddress: countOption("maxPendingConnectionsPerAddress", options.maxPendingConnectionsPerAddress, 64),
    },
    (socket) => (socket as Duplex & { [LAST_REQUEST]?: IncomingMessage })[LAST_REQUEST],
    () => runtime.clock.now(),
  );
  const limits = [headersTimeout, requestTimeout].filter((ms) => ms > 0);
  const server = createHttpServer(
    {
      headersTimeout,
      requestTimeout,
      keepAliveTimeout: 5_000,
      // Node checks those timeouts only on this interval (30 s by default), so a deadline could pass
      // unnoticed for 30 s: check every second, or at a quarter of a shorter limit.
      connectionsCheckingInterval: Math.max(50, Math.min(1_000, ...limits.map((ms) => Math.floor(ms / 4)))),
      // Node would answer a missing Host itself, bare; the app answers it in JSON (createServer).
      requireHostHeader: false,
    },
    app,
  );
  // Not `server.maxConnections`: Node would drop a newcomer past it before the `connection` event, so the
  // allowances could not close an older pending connection for it. They hold the bound themselves.
  // Headers are bounded by their size (Node's 16 KiB), not their number: Node 24 answers a 431 past 1,000 header
  // lines where Node 20 passed them on, and the same request must get the same answer on both.
  server.maxHeadersCount = 0;
  // No address, no crowd of connections that never finish a request, and no few addresses holding the server full
  // of requests hold every slot.
  server.on("connection", (socket: Socket) => allowances.admit(socket));

  // Sockets answered outside a ServerResponse, still open so the client can read the answer.
  const lingering = new Set<Duplex>();
  const answerAndClose = (socket: Duplex, answer: string, waitForClient = true) => {
    lingering.add(socket);
    // Closing while the client is still sending would reset the connection, and a reset can discard
    // the answer before the client reads it: wait for the client to close first, within a bound.
    socket.end(answer, waitForClient ? undefined : () => socket.destroy());
    const timer = setTimeout(() => socket.destroy(), LINGER_MS);
    socket.once("end", () => socket.destroy());
    socket.once("close", () => {
      clearTimeout(timer);
      lingering.delete(socket);
    });
  };

  // The last request each socket carried, to know whether a parse error falls in a body already answered.
  // A property of the socket, not a WeakMap entry: set on every request, it must cost next to nothing.
  server.on("request", (req: IncomingMessage) => {
    (req.socket as Duplex & { [LAST_REQUEST]?: IncomingMessage })[LAST_REQUEST] = req;
    allowances.active(req.socket);
  });

  // Node's own answers to these are bare text without OXP-Version (docs/protocol.md 7: every error is JSON).
  server.on("clientError", (error: NodeJS.ErrnoException, socket: Duplex) => {
    // The parser stays failed and reports again on every chunk: the first answer stands.
    if (lingering.has(socket)) {
      return;
    }
    const last = (socket as Duplex & { [LAST_REQUEST]?: IncomingMessage })[LAST_REQUEST];
    const pending = (socket as Duplex & { _httpMessage?: unknown })._httpMessage;
    if (last && !last.complete && !pending) {
      // The error is in the body of a request the app already answered: a second answer would be read
      // as the answer to a request never sent.
      socket.destroy();
      return;
    }
    // As Node's default handler does: write only if the socket is open and no answer has begun on it,
    // else the bytes would corrupt a response already under way.
    const message = (socket as Duplex & { _httpMessage?: { _headerSent?: boolean } | null })._httpMessage;
    if (error.code === "ECONNRESET" || !socket.writable || message?._headerSent) {
      socket.destroy();
      return;
    }
    const { status, message: text } = clientErrorAnswer(error.code);
    // After a timeout the parser has not failed: more bytes could still complete the request and reach
    // the app, so close once the answer is out, as Node does (the client stalled: nothing is left unread).
    answerAndClose(socket, rawAnswer(status, text), status !== 408);
  });

  // Without a listener Node destroys the socket of a CONNECT without a word.
  server.on("connect", (_req: IncomingMessage, socket: Duplex) => {
    // Node hands the socket over without its error listener: an error must not crash the process.
    socket.on("error", () => socket.destroy());
    socket.resume();
    answerAndClose(
      socket,
      rawAnswer(405, "CONNECT is not supported: this is not a proxy", { Allow: "GET, HEAD, POST" }),
    );
  });

  // Node answers an unknown expectation with a bare 417; 100-continue still takes Node's path.
  server.on("checkExpectation", (_req, res) => {
    const body = JSON.stringify({ message: "Only the expectation 100-continue is supported" });
    res.writeHead(417, {
      "Content-Type": "application/json",
      "OXP-Version": OXP_VERSION,
      // The client may send its body anyway: it must not be read as the next request.
      Connection: "close",
      "Content-Length": Buffer.byteLength(body),
    });
    res.end(body);
  });
  // Upgrade requests need nothing: with no `upgrade` listener Node 20 passes them to the app as plain requests.

  lifecycle.ready = false;
  server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  await once(server, "listening");
  const { address, port } = server.address() as AddressInfo;
  const url = `http://${address.includes(":") ? `[${address}]` : address}:${port}`;

  // An app whose first request compiles something (Express's contract validator) gets that request from here.
  // Its own connection, closed after it: a pooled one could be reused by the process's fetch as the server
  // drops it, and would hold one of the maxConnections meanwhile.
  await new Promise<void>((resolve) => {
    if (!runtime.warmUp) {
      resolve();
      return;
    }
    const req = httpGet(
      { host: address, port, path: "/health", agent: false, headers: { Connection: "close" } },
      (res) => {
        res.resume();
        res.once("end", resolve);
        res.once("error", () => resolve());
      },
    );
    req.once("error", () => resolve());
  });
  lifecycle.ready = true;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      runtime.drain();
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + (options.drainTimeoutMs ?? 10_000);
      while (lifecycle.inFlight > 0 && Date.now() < deadline) {
        await sleep(20);
        server.closeIdleConnections();
      }
      try {
        if (lifecycle.inFlight > 0) {
          // A reset would leave callers unsure whether their call ran: answer them (retryable) instead.
          const graceEnd = Date.now() + ABORT_GRACE_MS;
          let timer: NodeJS.Timeout | undefined;
          await Promise.race([
            runtime.abortAll(),
            new Promise<void>((resolve) => {
              timer = setTimeout(resolve, ABORT_GRACE_MS);
            }),
          ]).finally(() => clearTimeout(timer));
          while (lifecycle.inFlight > 0 && Date.now() < graceEnd) {
            await sleep(20);
            server.closeIdleConnections();
          }
        }
      } finally {
        server.closeAllConnections();
        for (const socket of lingering) {
          socket.destroy();
        }
        await closed;
      }
    })();
    return closing;
  };

  if (options.handleSignals) {
    const onSignal = () => {
      close().then(
        () => process.exit(0),
        () => process.exit(1),
      );
    };
    process.once("SIGTERM", onSignal);
    process.once("SIGINT", onSignal);
  }
  return { url, server, close };
}
