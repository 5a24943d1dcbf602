/** The HTTP contract both adapters (Express and node:http) share: routes, host and draining checks, origins, headers, CORS. */
import type { IncomingMessage, ServerResponse } from "node:http";
import type { Socket } from "node:net";
import { gzipSync } from "node:zlib";
import { HEALTH_PATH, OXP_ROUTES, OXP_VERSION, TOOLS_CALL_PATH, TOOLS_PATH } from "@otc/types";
import bytes from "bytes";
import corsMiddleware from "cors";
import Negotiator from "negotiator";
import type { Logger } from "pino";
import vary from "vary";
import { SPEC_MISMATCH_MESSAGE } from "../core/call-body.js";
import { ServerConfigError, shorten, WireError } from "../core/errors.js";
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_VALUES, type JsonLimits } from "../core/json-limits.js";
import {
  type CallEvent,
  type CallMeta,
  type CallObserver,
  CHALLENGE_CHECK_PATH,
  OxpCore,
  type OxpCoreOptions,
} from "../core/oxp-core.js";
import { unsupportedVersion } from "../core/protocol-version.js";
import { parseTraceparent } from "../core/traceparent.js";
import type { AllowedHosts, HostCheck } from "./allowed-hosts.js";
import { type AuthenticationOptions, createAuthenticator } from "./authentication.js";
import { ClientBudget, type FairnessOptions } from "./client-budget.js";
import { addressGroup } from "./connection-allowances.js";
import { createLogger } from "./logger.js";

/** The options both adapters take (each adds its own kind of `pages`). */
export interface AdapterOptions extends Omit<OxpCoreOptions, "logger"> {
  /** Server authentication; off when absent. */
  auth?: AuthenticationOptions;
  /** Bodies nested deeper than this are refused with a 400. Default 64. */
  maxDepth?: number;
  /** Bodies holding more values than this (object members and array items in all) are refused with a 400. Default 10,000. */
  maxValues?: number;
  /**
   * How much of the server's time one client's calls may take (parsing, checking, running, answering) before further calls of its
   * are answered 429 with `Retry-After` (a client is the principal, or an anonymous caller's address), or
   * `false` for no such limit. Default: a quarter of the server's time, after a burst of 250 ms.
   */
  fairness?: FairnessOptions | false;
  /** The largest request body, in bytes or as `"1mb"`. Default 1 MiB. */
  bodyLimit?: number | string;
  /** Validate every response against the spec too (a mismatch becomes a 500). For tests; default false. */
  validateResponses?: boolean;
  /**
   * The server's public base URL for challenge links (e.g. `https://tools.example.com`). Default: the
   * address the request came in on; never the request's `Host` header, which a client controls.
   */
  publicUrl?: string;
  /**
   * The `Host` names requests may carry, against DNS rebinding: names such as `tools.example.com`,
   * `.example.com` for a domain and its subdomains, or `"any"`. IP addresses, `localhost`, `*.localhost`
   * and `publicUrl`'s host are always accepted; any other name gets a 400. Default: checked only on
   * requests that arrive on a loopback address; a list checks every request.
   */
  allowedHosts?: AllowedHosts;
  /** Cross-origin access for browser pages served elsewhere; off by default. */
  cors?: CorsOptions;
  /** Honour W3C `traceparent` headers as trace ids. Default true. */
  tracing?: boolean;
  /** A pino logger, or `false` for none. Default: JSON lines on standard output at `LOG_LEVEL`. */
  logger?: Logger | false;
  /** Metrics and traces (see `createTelemetry`); none by default. */
  telemetry?: Telemetry;
}

/** Telemetry an adapter plugs in: metrics through a call observer and a page, a trace span around each call. */
export interface Telemetry {
  /** Told of every call; runs beside the `observer` option. */
  readonly observer?: CallObserver;
  /** Pages it serves (e.g. `GET /metrics`), each guarding itself: server authentication does not apply. */
  readonly pages?: readonly PageHandler[];
  /**
   * Runs one `POST /tools/call` inside a trace span: reads the request's trace headers, may set response
   * headers (`traceparent`) before `run` answers, and learns how the call ended through `onEnd`.
   */
  traceCall?<T>(
    req: IncomingMessage,
    res: ServerResponse,
    run: (onEnd: (event: CallEvent) => void) => Promise<T>,
  ): Promise<T>;
}

/** What both adapters build from their options before serving: the core, the authenticator, the settings. */
export function adapterRuntime(options: AdapterOptions) {
  const logger = options.logger === false ? undefined : (options.logger ?? createLogger());
  const { logger: _logger, ...coreOptions } = options;
  const { telemetry } = options;
  const observer = combinedObserver(options.observer, telemetry?.observer);
  return {
    logger,
    telemetry,
    core: new OxpCore({ ...coreOptions, ...(logger ? { logger } : {}), ...(observer ? { observer } : {}) }),
    authenticate: createAuthenticator(options.auth, logger),
    lifecycle: { ready: true, draining: false, inFlight: 0 } as OxpLifecycle,
    tracing: options.tracing ?? true,
    maxDepth: options.maxDepth ?? DEFAULT_MAX_DEPTH,
    jsonLimits: jsonLimits(options),
    budget: options.fairness === false ? undefined : new ClientBudget(options.fairness),
    publicUrl: options.publicUrl?.replace(/\/+$/, ""),
    limit: bodyLimitBytes(options.bodyLimit),
    cors: createCorsHandler(options.cors),
  };
}

function jsonLimits(options: AdapterOptions): JsonLimits {
  const limits = {
    maxDepth: options.maxDepth ?? DEFAULT_MAX_DEPTH,
    maxValues: options.maxValues ?? DEFAULT_MAX_VALUES,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!(Number.isSafeInteger(value) && value > 0)) throw new ServerConfigError(`${name} must be a positive integer`);
  }
  return limits;
}

/**
 * Who the per-client limits (the fairness budget, running calls) count a request against: its principal, or
 * its address (an IPv6 /64) when the principal is `anonymous`, so that with authentication off one caller has its
 * own share.
 */
export function clientOf(principal: string, req: IncomingMessage): string {
  // An IPv6 client counts by its /64, as for connections: one subscriber can take a fresh address per request.
  return principal === "anonymous" ? `address:${addressGroup(req.socket.remoteAddress)}` : principal;
}

/** The observer the core gets: the `observer` option and the telemetry's, both told of everything. */
export function combinedObserver(...observers: (CallObserver | undefined)[]): CallObserver | undefined {
  const present = observers.filter((observer): observer is CallObserver => observer !== undefined);
  if (present.length <= 1) return present[0];
  return {
    callStarted: () => {
      for (const observer of present) observer.callStarted?.();
    },
    callEnded: (event) => {
      for (const observer of present) observer.callEnded?.(event);
    },
    challengeStarted: (providerId) => {
      for (const observer of present) observer.challengeStarted?.(providerId);
    },
  };
}

/** What `listen` needs to manage a running app: readiness, draining and in-flight requests. */
export interface OxpLifecycle {
  /** False while warming up: `/health` answers 503. */
  ready: boolean;
  /** True once shutdown began: every request is answered 503. */
  draining: boolean;
  /** Requests in progress. */
  inFlight: number;
}

/** What `listen` manages for an OXP app: its lifecycle, and the core whose calls it can abort. */
export interface OxpRuntime {
  readonly lifecycle: OxpLifecycle;
  readonly core: OxpCore;
}

/** Cross-origin access for browser pages served elsewhere (e.g. the OXP Inspector run against this server). Off by default. */
export interface CorsOptions {
  /** Origins allowed to call the server from a browser (`https://app.example.com`), or `"*"` for any. */
  origins: readonly string[] | "*";
  /** How long a browser may cache a preflight answer, in seconds. Default 600. */
  maxAgeSeconds?: number;
}

/** A handler in the node style that Express and the node:http adapter both run: `next()` when it does not serve the request. */
export type PageHandler = (req: IncomingMessage, res: ServerResponse, next: (error?: unknown) => void) => void;

/** The spec's routes with the methods each takes, HEAD wherever GET is (docs/protocol.md 1). */
export const ROUTES: readonly { path: string; methods: readonly string[] }[] = OXP_ROUTES.map((route) => ({
  path: route.path,
  methods: route.methods.flatMap((method) => (method === "GET" ? ["GET", "HEAD"] : [method])),
}));

/** A protocol route a request names: its name, the methods it takes, and (for a check_url) the raw challenge id segment. */
export type ProtocolRoute =
  | { name: "health" | "tools" | "call"; methods: readonly string[] }
  | { name: "check"; methods: readonly string[]; segment: string };

const methodsOf = (path: string) => ROUTES.find((route) => route.path === path)?.methods ?? [];
const HEALTH_METHODS = methodsOf(HEALTH_PATH);
const TOOLS_METHODS = methodsOf(TOOLS_PATH);
const CALL_METHODS = methodsOf(TOOLS_CALL_PATH);
const CHECK_METHODS = methodsOf(`${CHALLENGE_CHECK_PATH}/{challenge_id}`);
const CHECK_PREFIX = `${CHALLENGE_CHECK_PATH}/`;
const CALL_ROUTE: ProtocolRoute = Object.freeze({ name: "call", methods: CALL_METHODS });
const TOOLS_ROUTE: ProtocolRoute = Object.freeze({ name: "tools", methods: TOOLS_METHODS });
const HEALTH_ROUTE: ProtocolRoute = Object.freeze({ name: "health", methods: HEALTH_METHODS });

/**
 * The path of a request target without its query: the origin form as sent, or the path of the absolute
 * form a proxy may send (scheme and host dropped, nothing normalised: `..` stays `..`, as Express sees it).
 */
export function requestPath(target: string): string | undefined {
  let path = target;
  if (path.charCodeAt(0) !== 47 /* / */) {
    const authority = /^https?:\/\/[^/?#]*/i.exec(path);
    if (!authority) return undefined;
    path = path.slice(authority[0].length) || "/";
    if (path.charCodeAt(0) !== 47) path = `/${path}`;
  }
  const query = path.indexOf("?");
  return query === -1 ? path : path.slice(0, query);
}

/**
 * The protocol route a path names, or undefined: case-sensitive, one trailing slash tolerated (as
 * Express routes match). The challenge id stays encoded: it is decoded after authentication.
 */
export function protocolRouteOf(rawPath: string): ProtocolRoute | undefined {
  const path = rawPath.length > 1 && rawPath.endsWith("/") ? rawPath.slice(0, -1) : rawPath;
  switch (path) {
    case TOOLS_CALL_PATH:
      return CALL_ROUTE;
    case TOOLS_PATH:
      return TOOLS_ROUTE;
    case HEALTH_PATH:
      return HEALTH_ROUTE;
  }
  if (path.startsWith(CHECK_PREFIX)) {
    const segment = path.slice(CHECK_PREFIX.length);
    if (segment.length > 0 && !segment.includes("/")) return { name: "check", methods: CHECK_METHODS, segment };
  }
  return undefined;
}

/** The largest body an adapter reads, in bytes, from the `bodyLimit` option (a number or a size such as `"1mb"`). */
export function bodyLimitBytes(option: number | string | undefined): number {
  const limit = option === undefined ? DEFAULT_BODY_LIMIT : typeof option === "string" ? bytes.parse(option) : option;
  if (limit === null || !(Number.isFinite(limit) && limit >= 0)) {
    throw new ServerConfigError("bodyLimit must be a number of bytes or a size such as '1mb'");
  }
  return limit;
}

const DEFAULT_BODY_LIMIT = 1024 * 1024;

/**
 * The checks of a call body's framing both adapters make before reading it: a declared length past the
 * limit is a 413 at once (nothing is read), and a body other than UTF-8 JSON without `Content-Encoding`
 * is a 415.
 */
export function checkBodyFraming(req: IncomingMessage, limit: number): void {
  const declared = Number(req.headers["content-length"]);
  if (declared > limit) throw bodyTooLarge(limit);
  const encoding = firstHeader(req.headers["content-encoding"])?.trim().toLowerCase();
  if (encoding && encoding !== "identity") {
    throw new WireError("unsupported_media_type", "The request body's encoding is not supported", {
      developerMessage: "Send the body without Content-Encoding.",
    });
  }
  const charset = /;\s*charset\s*=\s*"?([^";\s]+)/i.exec(req.headers["content-type"] ?? "")?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== "utf-8") {
    throw new WireError("unsupported_media_type", "The request body's encoding is not supported", {
      developerMessage: "Send the body as UTF-8 JSON (charset=utf-8, or no charset).",
    });
  }
}

/** The 413 for a body past `limit`; the connection closes, so what is left of the body is never read. */
export function bodyTooLarge(limit: number): WireError {
  return new WireError("payload_too_large", "The request body is too large", {
    developerMessage: `The limit is ${limit} bytes.`,
    headers: { Connection: "close" },
  });
}

/** The spec declares one media type for request bodies: application/json, parameters (charset) allowed. */
export const isJsonType = (contentType: string | undefined) =>
  contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType.trim());

/** `http://address:port` of the socket's local end: where this server was reached, whatever `Host` says. */
export function localOrigin(socket: Socket): string {
  const address = (socket.localAddress ?? "127.0.0.1").replace(/^::ffff:(?=\d+\.)/, "");
  return `http://${address.includes(":") ? `[${address}]` : address}:${socket.localPort}`;
}

/** The media type of every JSON answer. */
export const JSON_CONTENT_TYPE = "application/json; charset=utf-8";

/**
 * Writes a JSON answer in one `writeHead` and one `end`, `OXP-Version` included: Express's `res.json` costs
 * more per call (its content-type, charset and ETag handling: bench/results/notes.md), and headers given together skip the
 * merge with `setHeader`'s.
 */
export function writeJson(
  res: ServerResponse,
  status: number,
  text: string | Buffer,
  headers?: Record<string, string>,
): void {
  const length = Buffer.byteLength(text);
  res.writeHead(
    status,
    headers
      ? { ...headers, "OXP-Version": OXP_VERSION, "Content-Type": JSON_CONTENT_TYPE, "Content-Length": length }
      : { "OXP-Version": OXP_VERSION, "Content-Type": JSON_CONTENT_TYPE, "Content-Length": length },
  );
  res.end(text);
}

/** What {@link RequestCallMeta} is made from. */
export interface RequestCallMetaInit {
  principal: string;
  /** Who the per-client limits count the call against ({@link clientOf}). */
  client: string;
  req: IncomingMessage;
  res: ServerResponse;
  tracing: boolean;
  publicUrl: string | undefined;
  /** Where the app is mounted (Express's `req.baseUrl`), for the base URL. */
  mountPath?: string;
  /** The fairness budget the input check is charged to. */
  budget: ClientBudget | undefined;
  /** How many values the body held (`scanJson`'s count). */
  bodyValues: number | undefined;
}

/**
 * A call's meta from an HTTP request: its principal and client, `traceparent`'s trace id (when tracing is on),
 * a base URL (the public URL, else the address the socket was reached on, plus the mount path) looked up only
 * when a challenge reads it, the fairness budget its input check is charged to, and a watch on its connection.
 */
export class RequestCallMeta implements CallMeta {
  readonly principal: string;
  readonly client: string;
  readonly traceId: string | undefined;
  readonly bodyValues: number | undefined;
  onEnd?: CallMeta["onEnd"];
  private readonly socket: Socket;
  private readonly res: ServerResponse;
  private readonly publicUrl: string | undefined;
  private readonly mountPath: string;
  private readonly budget: ClientBudget | undefined;
  constructor(init: RequestCallMetaInit) {
    this.principal = init.principal;
    this.client = init.client;
    this.traceId = init.tracing ? parseTraceparent(firstHeader(init.req.headers.traceparent))?.traceId : undefined;
    this.bodyValues = init.bodyValues;
    this.socket = init.req.socket;
    this.res = init.res;
    this.publicUrl = init.publicUrl;
    this.mountPath = init.mountPath ?? "";
    this.budget = init.budget;
  }
  get baseUrl(): string {
    return this.publicUrl ?? `${localOrigin(this.socket)}${this.mountPath}`;
  }
  charge(ms: number): void {
    this.budget?.charge(this.client, ms);
  }
  /** Calls `onGone` if the connection closes before the answer is written; returns the function that stops watching. */
  watchClient(onGone: () => void): () => void {
    const res = this.res;
    if (res.destroyed) {
      // Gone before the run began: its `close` has passed.
      queueMicrotask(onGone);
      return () => {};
    }
    const listener = () => {
      if (!res.writableFinished) onGone();
    };
    res.once("close", listener);
    return () => res.off("close", listener);
  }
}

export const firstHeader = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * The check every request passes first: exactly one Host (RFC 9112 3.2; `listen` leaves it to the app,
 * to answer in JSON), a Host the `allowedHosts` option accepts (`hostAllowed`, from `createHostCheck`),
 * and no new work while draining. Returns the error to answer with, if any.
 */
export function admissionError(
  req: IncomingMessage,
  lifecycle: OxpLifecycle,
  res: ServerResponse,
  hostAllowed?: HostCheck,
): WireError | undefined {
  let hosts = 0;
  const raw = req.rawHeaders;
  for (let i = 0; i < raw.length; i += 2) if (raw[i]?.length === 4 && raw[i]?.toLowerCase() === "host") hosts++;
  if (hosts > 1 || (hosts === 0 && req.httpVersion === "1.1")) {
    return new WireError("bad_request", "The request must carry exactly one Host header", {
      developerMessage: `It carried ${hosts}.`,
    });
  }
  if (hostAllowed && !hostAllowed(req)) {
    // A 400, which the spec declares on every route: the request names a server this is not.
    return new WireError("bad_request", "The request's Host does not name this server", {
      developerMessage: `Host '${shorten(req.headers.host ?? "")}' is not among the server's allowedHosts.`,
    });
  }
  if (lifecycle.draining) {
    res.setHeader("Connection", "close");
    return new WireError("unavailable", "The server is shutting down", {
      developerMessage: "Retry on another instance.",
    });
  }
  return undefined;
}

/** Counts a request in flight until its response finishes or its connection closes. */
export function trackInFlight(lifecycle: OxpLifecycle, res: ServerResponse): void {
  lifecycle.inFlight++;
  // A response emits `close` once, after `finish` or when its connection ends first: one listener is enough.
  res.on("close", () => {
    lifecycle.inFlight--;
  });
}

/** Logs a refused credential: who tried and why, never what they sent. */
export function logFailedAuthentication(
  logger: Pick<Logger, "warn"> | undefined,
  error: unknown,
  req: IncomingMessage,
): void {
  if (error instanceof WireError && error.kind === "unauthorized") {
    logger?.warn(
      { reason: error.details.developerMessage, remote_address: req.socket.remoteAddress, method: req.method },
      "authentication failed",
    );
  }
}

/**
 * True when an `If-None-Match` header names `etag` (weak comparison, as for GET) or is `*`. Request
 * `Cache-Control` does not matter here: it speaks to caches, and fetch() sends `no-cache` with every
 * conditional request.
 */
export function ifNoneMatch(header: string | undefined, etag: string): boolean {
  if (header === undefined) return false;
  if (header.trim() === "*") return true;
  return header.split(",").some((tag) => tag.trim().replace(/^W\//, "") === etag);
}

/** Below this many bytes the tool list is sent as is: gzip would save little on it. */
const GZIP_MIN_BYTES = 1024;

/** The gzipped tool list of each catalog (by the core's cached list), made on first request. */
const gzippedLists = new WeakMap<object, { body: Buffer; etag: string } | null>();

/**
 * The GET /tools answer for a request: the list serialized once per catalog, gzipped once too for a client
 * whose `Accept-Encoding` takes it (a 1,000-tool list shrinks ~20 times, and so does the cost of sending it),
 * or 304 when `If-None-Match` names either form's ETag (both decode to the same list). Each form has its own
 * strong ETag, and every answer says `Vary: Accept-Encoding`.
 */
export function toolListAnswer(
  core: Pick<OxpCore, "toolList">,
  req: IncomingMessage,
  res: ServerResponse,
): { status: 200 | 304; body?: string | Buffer; headers: Record<string, string> } {
  // Added to what is already there (CORS varies by Origin), not in writeHead's headers, which would replace it.
  vary(res, "Accept-Encoding");
  const list = core.toolList();
  let gzipped = gzippedLists.get(list);
  if (gzipped === undefined) {
    // Decided once per catalog: null for a list too small to be worth it.
    gzipped =
      Buffer.byteLength(list.body) >= GZIP_MIN_BYTES
        ? { body: gzipSync(list.body, { level: 9 }), etag: `${list.etag.slice(0, -1)}-gzip"` }
        : null;
    gzippedLists.set(list, gzipped);
  }
  const condition = firstHeader(req.headers["if-none-match"]);
  for (const etag of gzipped ? [list.etag, gzipped.etag] : [list.etag]) {
    if (ifNoneMatch(condition, etag)) return { status: 304, headers: { ETag: etag } };
  }
  if (gzipped && new Negotiator(req).encoding(["gzip", "identity"]) === "gzip") {
    return {
      status: 200,
      body: gzipped.body,
      headers: { ETag: gzipped.etag, "Content-Encoding": "gzip" },
    };
  }
  return { status: 200, body: list.body, headers: { ETag: list.etag } };
}

/** The `/health` answer: 200 while ready, 503 while starting (draining is refused before any route). */
export function healthAnswer(lifecycle: OxpLifecycle): { status: number; body: object } {
  return lifecycle.ready
    ? { status: 200, body: { status: "ok" } }
    : { status: 503, body: { message: "The server is starting" } };
}

/** The request headers a browser page may send, and the response headers it may read. */
const CORS_ALLOWED_HEADERS = [
  "Content-Type",
  "OXP-Version",
  "OXP-API-Key",
  "Authorization",
  "traceparent",
  "tracestate",
];
const CORS_EXPOSED_HEADERS = ["OXP-Version", "WWW-Authenticate", "Retry-After", "ETag", "traceparent"];

/**
 * The CORS handler (the `cors` package) for the given options: answers preflights itself and adds
 * the headers to other requests from allowed origins; undefined when CORS is off.
 */
export function createCorsHandler(options: CorsOptions | undefined): PageHandler | undefined {
  if (!options) return undefined;
  const origins = options.origins === "*" ? "*" : [...options.origins];
  return corsMiddleware({
    origin: origins,
    methods: ["GET", "HEAD", "POST"],
    allowedHeaders: CORS_ALLOWED_HEADERS,
    exposedHeaders: CORS_EXPOSED_HEADERS,
    maxAge: options.maxAgeSeconds ?? 600,
    optionsSuccessStatus: 204,
  }) as PageHandler;
}

/** Turns anything thrown into its wire error: a JSON body with the right status, never HTML or a stack. */
export function toWireError(error: unknown, req?: IncomingMessage & { body?: unknown }): WireError {
  if (error instanceof WireError) return error;
  if (error instanceof URIError) {
    return new WireError("bad_request", "The request URL is malformed", {
      developerMessage: "A path segment is not valid percent-encoding.",
      cause: error,
    });
  }
  const status = typeof error === "object" && error !== null ? (error as { status?: unknown }).status : undefined;
  const type = typeof error === "object" && error !== null ? (error as { type?: unknown }).type : undefined;
  if (type === "entity.too.large" || status === 413) {
    return new WireError("payload_too_large", "The request body is too large", { cause: error });
  }
  if (type === "entity.parse.failed") {
    return new WireError("bad_request", "The request body is not valid JSON", { cause: error });
  }
  if (type === "encoding.unsupported" || type === "charset.unsupported" || status === 415) {
    return new WireError("unsupported_media_type", "The request body's encoding is not supported", { cause: error });
  }
  if (status === 405) {
    // Errors raised with a 405 (the contract validator's) carry their own Allow header.
    const allow = (error as { headers?: { Allow?: string } }).headers?.Allow;
    return new WireError("method_not_allowed", "This method is not allowed here", {
      ...(allow ? { headers: { Allow: allow } } : {}),
      cause: error,
    });
  }
  if (status === 404) return new WireError("not_found", "Not found", { cause: error });
  if (typeof status === "number" && status >= 400 && status < 500) {
    // The contract validator judges OXP-Version and the envelope's $schema; they get the protocol's message.
    const paths = ((error as { errors?: { path?: string }[] }).errors ?? []).map((problem) => problem.path ?? "");
    if (paths.some((path) => /^\/headers\/oxp-version$/i.test(path))) {
      return unsupportedVersion(firstHeader(req?.headers["oxp-version"]) ?? "");
    }
    if (paths.includes("/body/$schema")) {
      return unsupportedVersion(String((req?.body as { $schema?: unknown } | undefined)?.$schema));
    }
    const problems = ((error as { errors?: { path?: string; message?: string }[] }).errors ?? []).map((problem) =>
      `${(problem.path ?? "").replace(/^\/body/, "body")} ${problem.message ?? ""}`.trim(),
    );
    // The body is a oneOf (flat request or envelope): each branch reports; keep what concerns the body sent.
    const relevant = problems.filter((line) => !/oneOf|required property 'request'/.test(line));
    const details = [...new Set(relevant.length > 0 ? relevant : problems)].slice(0, 5).join("; ");
    return new WireError("bad_request", SPEC_MISMATCH_MESSAGE, {
      developerMessage: shorten(details || (error instanceof Error ? error.message : "") || "Invalid request", 512),
      cause: error,
    });
  }
  if (typeof status === "number" && status >= 500 && (error as { errors?: unknown }).errors) {
    return new WireError("internal", "The server produced a response that does not match the OXP specification", {
      cause: error,
    });
  }
  return new WireError("internal", "Internal server error", { cause: error });
}
