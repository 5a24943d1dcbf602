/** The bridge's transports, both the SDK's: stdio, and streamable HTTP in stateless mode on node:http. */
import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, isIPv4 } from "node:net";
import type { Readable, Writable } from "node:stream";
import { StdioServerTransport } from "@modelcontextprotocol/sdk/server/stdio.js";
import { StreamableHTTPServerTransport } from "@modelcontextprotocol/sdk/server/streamableHttp.js";
import { constantTimeEqual, parseBearer } from "@otc/types";
import type { McpBridge } from "./bridge.js";

/** A bridge served over stdio. */
export interface StdioBridge {
  /** Resolves when the MCP client closes the connection (stdin ends). */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the bridge on stdin/stdout (or the given streams). Nothing else may write to stdout: it
 * carries the protocol.
 */
export async function serveStdio(
  bridge: McpBridge,
  streams: { stdin?: Readable; stdout?: Writable } = {},
): Promise<StdioBridge> {
  const server = bridge.createServer();
  const transport = new StdioServerTransport(streams.stdin, streams.stdout);
  const closed = new Promise<void>((resolve) => {
    server.onclose = () => resolve();
  });
  // The SDK's stdio transport does not notice the end of its input; a host closing the pipe ends the session.
  (streams.stdin ?? process.stdin).once("end", () => void server.close());
  await server.connect(transport);
  return { closed, close: () => server.close() };
}

/** Options of {@link serveHttp}. */
export interface HttpBridgeOptions {
  /** Default 0: an ephemeral port. */
  port?: number;
  /** Default 127.0.0.1: only this machine. Any other host needs a `token`. */
  host?: string;
  /** The path MCP clients POST to. Default `/mcp`. */
  path?: string;
  /**
   * A bearer token every request must carry (`Authorization: Bearer <token>`), at least 16
   * characters. Required on a host other than a loopback one: whoever reaches the endpoint uses the
   * bridge's OXP credentials, user id and secrets.
   */
  token?: string;
}

/** A bridge served over streamable HTTP. */
export interface HttpBridge {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  server: Server;
  close(): Promise<void>;
}

/** The shortest token {@link serveHttp} takes. */
export const MIN_TOKEN_LENGTH = 16;

/** Whether a listening host is reachable from this machine only: `localhost`, 127.0.0.0/8 or ::1. */
export function isLoopbackHost(host: string): boolean {
  const bare = host.replace(/^\[(.*)\]$/, "$1").toLowerCase();
  if (bare === "localhost" || bare === "::1") {
    return true;
  }
  const v4 = bare.startsWith("::ffff:") ? bare.slice("::ffff:".length) : bare;
  return isIPv4(v4) && v4.startsWith("127.");
}

function sendJson(res: ServerResponse, status: number, message: string, headers: Record<string, string> = {}) {
  res.writeHead(status, { "content-type": "application/json", ...headers }).end(JSON.stringify({ message }));
}

/** Whether the request carries `Authorization: Bearer <token>`, compared in constant time. */
function hasToken(req: IncomingMessage, expected: string): boolean {
  const sent = parseBearer(req.headers.authorization);
  return sent !== undefined && constantTimeEqual(sent, expected);
}

/**
 * Serves the bridge over streamable HTTP, stateless: every POST gets its own SDK server and transport
 * (the SDK refuses to reuse a stateless transport), so requests share nothing but the bridge's
 * catalog cache. Each request is therefore a session of its own: the client's capabilities from
 * `initialize` are not known to later requests, and server-to-client requests (elicitation) cannot be
 * answered, so authorizations are always returned as links. A `notifications/cancelled` comes in a POST
 * of its own and cannot reach the call it names; a client closing a call's response stream cancels it.
 *
 * With a `token`, every request without it gets a 401. A host other than a loopback one is refused
 * without a token (a RangeError). On a loopback host only `Host` headers naming the loopback address
 * and port are served (DNS rebinding protection), from the first request on.
 */
export async function serveHttp(bridge: McpBridge, options: HttpBridgeOptions = {}): Promise<HttpBridge> {
  const host = options.host ?? "127.0.0.1";
  const path = options.path ?? "/mcp";
  const loopback = isLoopbackHost(host);
  const { token } = options;
  if (token !== undefined && (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))) {
    throw new RangeError(`the HTTP token must be at least ${MIN_TOKEN_LENGTH} characters, without spaces`);
  }
  if (!loopback && token === undefined) {
    throw new RangeError(
      `listening on ${host} (not a loopback address) needs a token: anyone reaching the endpoint would use the bridge's OXP credentials`,
    );
  }
  // Set from the `listening` event, before any connection can be read; until then a loopback bridge
  // refuses rather than serve a request whose Host was not checked.
  let allowedHosts: Set<string> | undefined;

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    if (loopback) {
      if (!allowedHosts) {
        return sendJson(res, 503, "The MCP bridge is starting");
      }
      if (!allowedHosts.has((req.headers.host ?? "").toLowerCase())) {
        return sendJson(res, 403, "Forbidden: the Host header does not name this bridge");
      }
    }
    if (token !== undefined && !hasToken(req, token)) {
      return sendJson(res, 401, "A bearer token is required", { "www-authenticate": 'Bearer realm="otc-mcp"' });
    }
    const pathname = new URL(req.url ?? "/", "http://localhost").pathname;
    if (pathname !== path) {
      return sendJson(res, 404, `Not found: the MCP endpoint is ${path}`);
    }
    if (req.method !== "POST") {
      return sendJson(res, 405, "This stateless MCP endpoint takes POST only", { allow: "POST" });
    }
    const server = bridge.createServer();
    // The Host was checked above; the SDK's own check is kept as a second line.
    const transport = new StreamableHTTPServerTransport({
      sessionIdGenerator: undefined,
      ...(allowedHosts ? { enableDnsRebindingProtection: true, allowedHosts: [...allowedHosts] } : {}),
    });
    res.once("close", () => {
      void transport.close();
      void server.close();
    });
    await server.connect(transport);
    await transport.handleRequest(req, res);
  };

  const http = createHttpServer((req, res) => {
    handle(req, res).catch(() => {
      if (!res.headersSent) {
        sendJson(res, 500, "The MCP bridge failed to handle the request");
      } else {
        res.destroy();
      }
    });
  });
  http.once("listening", () => {
    const { port } = http.address() as AddressInfo;
    if (!loopback) {
      return;
    }
    const names = ["127.0.0.1", "localhost", "[::1]"];
    // A client leaves the port out of Host when it is HTTP's default.
    allowedHosts = new Set([...names.map((name) => `${name}:${port}`), ...(port === 80 ? names : [])]);
  });
  http.listen(options.port ?? 0, host);
  await once(http, "listening");
  const { port } = http.address() as AddressInfo;
  const shown = host.includes(":") ? `[${host}]` : host;
  return {
    url: `http://${shown}:${port}${path}`,
    server: http,
    close: () =>
      new Promise<void>((resolve, reject) => {
        http.close((error) => (error ? reject(error) : resolve()));
        http.closeAllConnections();
      }),
  };
}
