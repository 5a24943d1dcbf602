/**
 * The bridge's transports, the SDK's (v2) serving entries: stdio, and streamable HTTP (stateless) on
 * node:http through the SDK's web-standard handler, which serves both protocol generations, optionally as an
 * OAuth 2.1 resource server (auth.ts).
 */
import { once } from "node:events";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import { type AddressInfo, isIPv4 } from "node:net";
import type { Readable, Writable } from "node:stream";
import { getRequestListener } from "@hono/node-server";
import {
  type AuthInfo,
  createMcpHandler,
  localhostAllowedHostnames,
  localhostAllowedOrigins,
  validateHostHeader,
  validateOriginHeader,
} from "@modelcontextprotocol/server";
import { StdioServerTransport, serveStdio as serveSdkStdio } from "@modelcontextprotocol/server/stdio";
import { type Clock, type CoreLogger, systemClock } from "@otc/server/core";
import { constantTimeEqual, parseBearer } from "@otc/types";
import { callerOf, type HttpOAuthOptions, McpOAuthGate, type PlainAnswer } from "./auth.js";
import type { McpBridge } from "./bridge.js";

/** A bridge served over stdio. */
export interface StdioBridge {
  /** Resolves when the MCP client closes the connection (stdin ends). */
  closed: Promise<void>;
  close(): Promise<void>;
}

/**
 * Serves the bridge on stdin/stdout (or the given streams). Nothing else may write to stdout: it
 * carries the protocol. Rejects, before reading anything, when the OXP server lacks what the bridge's options need
 * ({@link McpBridge.ready}).
 */
export async function serveStdio(
  bridge: McpBridge,
  streams: { stdin?: Readable; stdout?: Writable } = {},
): Promise<StdioBridge> {
  await bridge.ready();
  const stdin = streams.stdin ?? process.stdin;
  const transport = new StdioServerTransport(stdin, streams.stdout);
  let done = () => {};
  const closed = new Promise<void>((resolve) => {
    done = resolve;
  });
  // The SDK's entry reads the opening message to pick the protocol generation (2025 `initialize` or a
  // 2026-07-28 request), then pins one server from the factory to the connection.
  const handle = serveSdkStdio(() => bridge.createServer(), { transport });
  // A host closing the pipe ends the session: the transport closes itself then, and so does the bridge.
  const end = () => {
    void handle.close().finally(done);
  };
  stdin.once("end", end);
  stdin.once("close", end);
  return {
    closed,
    close: async () => {
      await handle.close();
      done();
    },
  };
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
   * bridge's OXP credentials, user id and secrets. Not with `oauth`.
   */
  token?: string;
  /**
   * Serve as an OAuth 2.1 resource server, as MCP's authorization spec says: the protected resource metadata
   * (RFC 9728) at `/.well-known/oauth-protected-resource` and its path-inserted form (`.../mcp`), and every MCP
   * request needing an access token from one of `authorizationServers` whose `aud` is `resource` (default: the
   * bridge's own URL, which a host other than a loopback one cannot be: give it then). `tools/list` needs
   * `oxp:tools:read`, `tools/call` `oxp:tools:call` and the OXP tool's `required_scopes`. Each call is made with
   * the bridge's own OXP credentials for the token's user (`sub` as `context.user_id`); the token is never sent on.
   */
  oauth?: HttpOAuthOptions;
  /** Where `oauth` tells of an authorization server whose metadata or keys cannot be read. Default: nowhere. */
  logger?: Pick<CoreLogger, "warn">;
  /** The clock access tokens' `exp`, `nbf` and `iat` are checked on. Default the real one. */
  clock?: Clock;
}

/** A bridge served over streamable HTTP. */
export interface HttpBridge {
  /** The MCP endpoint, e.g. `http://127.0.0.1:3000/mcp`. */
  url: string;
  /** With `oauth`: the protected resource metadata's URL, which every 401 names. */
  resourceMetadataUrl?: string;
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

function send(res: ServerResponse, answer: PlainAnswer) {
  res.writeHead(answer.status, answer.headers).end(answer.body);
}

/** Whether the request carries `Authorization: Bearer <token>`, compared in constant time. */
function hasToken(req: IncomingMessage, expected: string): boolean {
  const sent = parseBearer(req.headers.authorization);
  return sent !== undefined && constantTimeEqual(sent, expected);
}

/**
 * Serves the bridge over streamable HTTP, stateless, in both protocol generations: 2026-07-28 (each
 * request carries its protocol version and client capabilities) and the 2025-era ones (initialize, then
 * requests without a session). Every POST gets its own SDK server, so requests share nothing but the
 * bridge's catalog cache. Server-to-client requests (elicitation) cannot be answered in either, so
 * authorizations are always returned as links. A `notifications/cancelled` comes in a POST of its own
 * and cannot reach the call it names; a client closing a call's response stream cancels it.
 *
 * With a `token`, every request without it gets a 401; with `oauth`, every request without a valid access
 * token (see {@link HttpBridgeOptions.oauth}). A host other than a loopback one is refused without either (a
 * RangeError). On a loopback host (DNS rebinding protection) only a `Host` naming a loopback address (`localhost`, `127.0.0.1`, `[::1]`, any port: the SDK's check) is served, and an
 * `Origin`, when sent, must be the bridge's own (http, a loopback name, its port); others get a 403.
 * Bodies over 4 MiB get a 413 (the SDK's limit). Rejects before listening when the OXP server lacks what the bridge's
 * options need ({@link McpBridge.ready}).
 */
export async function serveHttp(bridge: McpBridge, options: HttpBridgeOptions = {}): Promise<HttpBridge> {
  const host = options.host ?? "127.0.0.1";
  const path = options.path ?? "/mcp";
  const loopback = isLoopbackHost(host);
  const { token, oauth } = options;
  if (token !== undefined && (token.length < MIN_TOKEN_LENGTH || /\s/.test(token))) {
    throw new RangeError(`the HTTP token must be at least ${MIN_TOKEN_LENGTH} characters, without spaces`);
  }
  if (token !== undefined && oauth !== undefined) {
    throw new RangeError("give the HTTP bridge a token or oauth, not both");
  }
  if (!loopback && token === undefined && oauth === undefined) {
    throw new RangeError(
      `listening on ${host} (not a loopback address) needs a token or oauth: anyone reaching the endpoint would use the bridge's OXP credentials`,
    );
  }
  if (!loopback && oauth !== undefined && oauth.resource === undefined) {
    throw new RangeError(
      `listening on ${host} (not a loopback address), oauth needs its resource: the URL MCP clients reach the endpoint at`,
    );
  }
  await bridge.ready();
  const makeGate = (oauthOptions: HttpOAuthOptions, endpoint: string) =>
    new McpOAuthGate({
      bridge,
      oauth: oauthOptions,
      endpoint,
      logger: options.logger,
      clock: options.clock ?? systemClock,
    });
  // Made before listening where it can be, so that a configuration mistake throws before anything listens; a default
  // resource (the URL listened at) waits for the port.
  let gate = oauth?.resource === undefined ? undefined : makeGate(oauth, oauth.resource);
  /** The AuthInfo of each request the gate admitted, until the SDK's handler takes it. */
  const admitted = new WeakMap<IncomingMessage, AuthInfo>();
  // One handler for both generations: a 2026-07-28 request (its `_meta` envelope) gets a server of its
  // own; a 2025-era one (initialize, tools/call after it...) gets one over the SDK's stateless transport.
  const mcp = createMcpHandler(
    (context) => {
      if (!gate) {
        return bridge.createServer();
      }
      // Every request reaching the SDK was admitted: one without its caller would be served as nobody's, never as
      // the bridge's own user.
      const caller = callerOf(context.authInfo);
      if (!caller) {
        throw new Error("an MCP request reached the bridge without the caller its access token names");
      }
      return bridge.createServer(caller);
    },
    { legacy: "stateless" },
  );
  // node:http to the SDK's web-standard handler and back, streamed with backpressure. The client going away
  // (its response stream closed before the end) aborts the Request: the SDK then cancels the call it carries,
  // and the bridge cancels the OXP call.
  const serveFetch = getRequestListener((request, env) => {
    const authInfo = admitted.get(env.incoming as IncomingMessage);
    return gate && authInfo
      ? gate.serve(request, authInfo, (forward, forwardOptions) => mcp.fetch(forward, forwardOptions))
      : mcp.fetch(request);
  });

  const handle = async (req: IncomingMessage, res: ServerResponse) => {
    // DNS rebinding protection (MCP's transport security), by the SDK's checks, answered 403 as the spec asks.
    // A page whose name was rebound to 127.0.0.1 sends that name as Host.
    if (loopback && !validateHostHeader(req.headers.host, localhostAllowedHostnames()).ok) {
      return sendJson(res, 403, "Forbidden: the Host header does not name this bridge");
    }
    const pathname = new URL(req.url ?? "/", "http://localhost").pathname;
    // The metadata is public, and read by clients that have no token yet, browser-based ones from any origin.
    if (gate?.servesMetadata(pathname)) {
      return send(res, await gate.metadata(req.method ?? "GET"));
    }
    // A page a browser loaded from elsewhere may still reach 127.0.0.1 by its own name: its Origin says so.
    if (loopback && !ownOrigin(req.headers.origin, req.socket.localPort)) {
      return sendJson(res, 403, "Forbidden: the Origin header does not name this bridge");
    }
    if (token !== undefined && !hasToken(req, token)) {
      return sendJson(res, 401, "A bearer token is required", { "www-authenticate": 'Bearer realm="otc-mcp"' });
    }
    if (oauth !== undefined) {
      // Listening comes before the gate (its default resource is the URL listened at): nothing is served without it.
      if (!gate) {
        return sendJson(res, 503, "The MCP bridge is starting", { "retry-after": "1" });
      }
      const admission = await gate.admit(req);
      if ("refused" in admission) {
        return send(res, admission.refused);
      }
      admitted.set(req, admission.authInfo);
    }
    if (pathname !== path) {
      return sendJson(res, 404, `Not found: the MCP endpoint is ${path}`);
    }
    if (req.method !== "POST") {
      return sendJson(res, 405, "This stateless MCP endpoint takes POST only", { allow: "POST" });
    }
    await serveFetch(req, res);
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
  http.listen(options.port ?? 0, host);
  await once(http, "listening");
  const { port } = http.address() as AddressInfo;
  const shown = host.includes(":") ? `[${host}]` : host;
  const url = `http://${shown}:${port}${path}`;
  if (oauth !== undefined && gate === undefined) {
    try {
      gate = makeGate(oauth, url);
    } catch (error) {
      http.close();
      await mcp.close();
      throw error;
    }
  }
  return {
    url,
    ...(gate ? { resourceMetadataUrl: gate.metadataUrl } : {}),
    server: http,
    close: async () => {
      await new Promise<void>((resolve, reject) => {
        http.close((error) => (error ? reject(error) : resolve()));
        http.closeAllConnections();
      });
      await mcp.close();
    },
  };
}

/**
 * Whether a request's Origin (when it sends one) is this bridge's own: a loopback name by the SDK's check, and then
 * http and the port it came in on. The SDK's check alone takes any scheme and port, so a page of any other server on
 * this machine (`http://localhost:3000`) would pass, and use the bridge's OXP credentials.
 */
function ownOrigin(origin: string | undefined, port: number | undefined): boolean {
  if (!validateOriginHeader(origin, localhostAllowedOrigins()).ok) {
    return false;
  }
  if (!origin) {
    return true;
  }
  const url = new URL(origin);
  return url.protocol === "http:" && Number(url.port || 80) === port;
}
