/** Runs an OXP app on a port with graceful shutdown (PROTOCOL.md 7): 503 on /health, drain, exit. */
import { once } from "node:events";
import { createServer as createHttpServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { OxpApp } from "./create-server.js";

/** Options of {@link listen}. */
export interface ListenOptions {
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Default 127.0.0.1. */
  host?: string;
  /** How long shutdown waits for calls in flight before cutting connections, in ms. Default 10,000. */
  drainTimeoutMs?: number;
  /** Shut down and exit 0 on SIGTERM and SIGINT. Default false (a library should not own the process). */
  handleSignals?: boolean;
}

/** A running server. */
export interface RunningServer {
  /** `http://host:port`, the host in brackets when it is IPv6. */
  url: string;
  server: Server;
  /** Stops taking connections, lets calls in flight finish (bounded), then closes everything. */
  close(): Promise<void>;
}

/**
 * Listens, warms the contract validator up (so the first call is not slow), and wires graceful
 * shutdown. `/health` answers 503 until warm and again once shutdown begins.
 *
 * @example
 * const { url, close } = await listen(createServer({ tools }), { port: 8080, handleSignals: true });
 */
export async function listen(app: OxpApp, options: ListenOptions = {}): Promise<RunningServer> {
  const lifecycle = app.locals.oxp;
  const server = createHttpServer(app);
  server.keepAliveTimeout = 5_000;
  lifecycle.ready = false;
  server.listen(options.port ?? 0, options.host ?? "127.0.0.1");
  await once(server, "listening");
  const { address, port } = server.address() as AddressInfo;
  const url = `http://${address.includes(":") ? `[${address}]` : address}:${port}`;

  // The validator compiles the document on its first request: make that request ours.
  await fetch(`${url}/health`).then(
    (response) => response.arrayBuffer(),
    () => undefined,
  );
  lifecycle.ready = true;

  let closing: Promise<void> | undefined;
  const close = () => {
    closing ??= (async () => {
      lifecycle.draining = true;
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      server.closeIdleConnections();
      const deadline = Date.now() + (options.drainTimeoutMs ?? 10_000);
      while (lifecycle.inFlight > 0 && Date.now() < deadline) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        server.closeIdleConnections();
      }
      server.closeAllConnections();
      await closed;
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
