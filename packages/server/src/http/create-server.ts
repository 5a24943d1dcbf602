/** The Express 5 adapter: the HTTP contract (auth, versions, bodies, spec validation, errors) around the core. */

import type { Socket } from "node:net";
import { OXP_ROUTES, OXP_VERSION, openapiDocument } from "@otc/types";
import express, { type ErrorRequestHandler, type Express, type Request, type RequestHandler } from "express";
import * as OpenApiValidator from "express-openapi-validator";
import type { Logger } from "pino";
import {
  type CallBody,
  checkDepth,
  DEFAULT_MAX_DEPTH,
  SPEC_MISMATCH_MESSAGE,
  unwrapCallBody,
  wrapResponse,
} from "../core/call-body.js";
import { shorten, WireError } from "../core/errors.js";
import { type CallMeta, CHALLENGE_CHECK_PATH, OxpCore, type OxpCoreOptions } from "../core/oxp-core.js";
import { unsupportedVersion } from "../core/protocol-version.js";
import { type AuthenticationOptions, createAuthenticator } from "./authentication.js";
import { createLogger } from "./logger.js";

/** Options of {@link createServer}. */
export interface ServerOptions extends Omit<OxpCoreOptions, "logger"> {
  /** Server authentication; off when absent. */
  auth?: AuthenticationOptions;
  /** Bodies nested deeper than this are refused with a 400. Default 64. */
  maxDepth?: number;
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
   * Express handlers served beside the protocol routes without server authentication, such as an
   * authorization provider's consent pages (a browser opens them). They share the server's headers,
   * lifecycle and error handling: their errors are JSON with `OXP-Version`, never HTML or a stack.
   */
  pages?: readonly RequestHandler[];
  /** Honour W3C `traceparent` headers as trace ids. Default true. */
  tracing?: boolean;
  /** A pino logger, or `false` for none. Default: JSON lines on standard output at `LOG_LEVEL`. */
  logger?: Logger | false;
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

/** What {@link listen} manages for an OXP app: its lifecycle, and the core whose calls it can abort. */
export interface OxpRuntime {
  readonly lifecycle: OxpLifecycle;
  readonly core: OxpCore;
}

/** An Express app serving OXP, with its runtime for {@link listen}. */
export type OxpApp = Express & { readonly oxp: OxpRuntime };

/**
 * The paths the contract serves and the methods each takes (for 405 and `Allow`): the spec's routes in
 * Express's syntax (`:challenge_id` for `{challenge_id}`), with HEAD wherever GET is (docs/protocol.md 1).
 */
const ROUTES: readonly { path: string; methods: readonly string[] }[] = OXP_ROUTES.map((route) => ({
  path: route.path.replace(/\{(\w+)\}/g, ":$1"),
  methods: route.methods.flatMap((method) => (method === "GET" ? ["GET", "HEAD"] : [method])),
}));

/** The spec declares one media type for request bodies: application/json, parameters (charset) allowed. */
const isJsonType = (contentType: string | undefined) =>
  contentType !== undefined && /^application\/json\s*(;|$)/i.test(contentType.trim());

/** The trace id of a W3C traceparent header (`00-<trace id>-<span id>-<flags>`). */
function traceIdOf(header: string | undefined): string | undefined {
  const match = /^[0-9a-f]{2}-([0-9a-f]{32})-[0-9a-f]{16}-[0-9a-f]{2}$/.exec(header?.trim() ?? "");
  return match?.[1] && !/^0+$/.test(match[1]) ? match[1] : undefined;
}

/** `http://address:port` of the socket's local end: where this server was reached, whatever `Host` says. */
function localOrigin(socket: Socket): string {
  const address = (socket.localAddress ?? "127.0.0.1").replace(/^::ffff:(?=\d+\.)/, "");
  return `http://${address.includes(":") ? `[${address}]` : address}:${socket.localPort}`;
}

function hostHeaderCount(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) if (rawHeaders[i]?.toLowerCase() === "host") count++;
  return count;
}

const firstHeader = (value: string | string[] | undefined) => (Array.isArray(value) ? value[0] : value);

/**
 * Creates an Express app that serves the given tools over OXP. It can be mounted under a prefix in
 * another Express app; `listen` runs it with graceful shutdown.
 *
 * @example
 * const app = createServer({ tools: [add], auth: { apiKeys: [process.env.OXP_API_KEY!] } });
 * await listen(app, { port: 8080 });
 */
export function createServer(options: ServerOptions): OxpApp {
  const logger = options.logger === false ? undefined : (options.logger ?? createLogger());
  const { logger: _logger, ...coreOptions } = options;
  const core = new OxpCore({ ...coreOptions, ...(logger ? { logger } : {}) });
  const authenticate = createAuthenticator(options.auth);
  const lifecycle: OxpLifecycle = { ready: true, draining: false, inFlight: 0 };
  const tracing = options.tracing ?? true;
  const maxDepth = options.maxDepth ?? DEFAULT_MAX_DEPTH;
  const publicUrl = options.publicUrl?.replace(/\/+$/, "");

  const app: OxpApp = Object.assign(express(), { oxp: { lifecycle, core } });
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  // One spelling per route: /TOOLS/CALL is not /tools/call.
  app.set("case sensitive routing", true);

  app.use((req, res, next) => {
    res.setHeader("OXP-Version", OXP_VERSION);
    lifecycle.inFlight++;
    let done = false;
    const finish = () => {
      if (!done) lifecycle.inFlight--;
      done = true;
    };
    res.once("finish", finish);
    res.once("close", finish);
    // HTTP/1.1 requires exactly one Host (RFC 9112 3.2); listen() leaves the check to us, to answer in JSON.
    const hosts = hostHeaderCount(req.rawHeaders);
    if (hosts > 1 || (hosts === 0 && req.httpVersion === "1.1")) {
      next(
        new WireError("bad_request", "The request must carry exactly one Host header", {
          developerMessage: `It carried ${hosts}.`,
        }),
      );
      return;
    }
    if (lifecycle.draining) {
      res.setHeader("Connection", "close");
      next(
        new WireError("unavailable", "The server is shutting down", { developerMessage: "Retry on another instance." }),
      );
      return;
    }
    next();
  });

  const authenticated: RequestHandler = async (req, _res, next) => {
    try {
      req.oxpPrincipal = authenticate
        ? await authenticate({
            apiKey: firstHeader(req.headers["oxp-api-key"]),
            authorization: firstHeader(req.headers.authorization),
          })
        : "anonymous";
      next();
    } catch (error) {
      if (error instanceof WireError && error.kind === "unauthorized") {
        // Who tried and why, never what they sent.
        logger?.warn(
          { reason: error.details.developerMessage, remote_address: req.socket.remoteAddress, method: req.method },
          "authentication failed",
        );
      }
      next(error);
    }
  };
  for (const page of options.pages ?? []) app.use(page);
  app.use((req, res, next) => (req.path === "/health" ? next() : authenticated(req, res, next)));

  const jsonBody = express.json({ limit: options.bodyLimit ?? "1mb", strict: false, type: () => true });
  app.post("/tools/call", (req, res, next) => {
    if (!isJsonType(req.headers["content-type"])) {
      next(
        new WireError("unsupported_media_type", "The request body must be JSON", {
          developerMessage: "Send the body with Content-Type: application/json.",
        }),
      );
      return;
    }
    jsonBody(req, res, (error?: unknown) => {
      try {
        if (error) throw error;
        if (req.body === undefined) {
          throw new WireError("bad_request", "The request has no body", {
            developerMessage: "Send a CallToolRequest.",
          });
        }
        // The one check the spec cannot state, before the contract validator: a hostile depth never reaches it.
        checkDepth(req.body, maxDepth);
        next();
      } catch (failure) {
        next(failure);
      }
    });
  });

  app.use(
    OpenApiValidator.middleware({
      apiSpec: structuredClone(openapiDocument) as unknown as Parameters<
        typeof OpenApiValidator.middleware
      >[0]["apiSpec"],
      validateRequests: { allowUnknownQueryParameters: true },
      validateResponses: options.validateResponses ?? false,
      validateSecurity: false,
      ignoreUndocumented: true,
      validateApiSpec: false,
      // Match routes on the URL below the mount point, so the app can live under a prefix.
      useRequestUrl: true,
    }),
  );

  app.get("/health", (_req, res) => {
    if (!lifecycle.ready) {
      res.status(503).json({ message: "The server is starting" });
      return;
    }
    res.json({ status: "ok" });
  });

  app.get("/tools", (_req, res) => {
    res.json(core.listTools());
  });

  app.get(`${CHALLENGE_CHECK_PATH}/:challenge_id`, async (req, res, next) => {
    try {
      res.json(await core.checkChallenge(String(req.params.challenge_id)));
    } catch (error) {
      next(error);
    }
  });

  app.post("/tools/call", async (req, res, next) => {
    try {
      // express-openapi-validator passed the body as CallToolRequest or CallToolEnvelope.
      const { request, envelope } = unwrapCallBody(req.body as CallBody);
      const meta: CallMeta = {
        principal: req.oxpPrincipal ?? "anonymous",
        baseUrl: publicUrl ?? `${localOrigin(req.socket)}${req.baseUrl}`,
      };
      const traceId = tracing ? traceIdOf(firstHeader(req.headers.traceparent)) : undefined;
      if (traceId) meta.traceId = traceId;
      res.json(wrapResponse(await core.call(request, meta), envelope));
    } catch (error) {
      next(error);
    }
  });

  for (const route of ROUTES) {
    app.all(route.path, (_req, _res, next) => {
      next(
        new WireError("method_not_allowed", "This method is not allowed here", {
          headers: { Allow: route.methods.join(", ") },
        }),
      );
    });
  }

  app.use((req, _res, next) => {
    next(
      new WireError("not_found", "Not found", { developerMessage: `Nothing is served at ${req.method} ${req.path}.` }),
    );
  });

  app.use(errorHandler(logger));
  return app;
}

declare module "express-serve-static-core" {
  interface Request {
    /** Who the request was authenticated as (`anonymous` when authentication is off). */
    oxpPrincipal?: string;
  }
}

/** Turns anything thrown into its wire error: a JSON body with the right status, never HTML or a stack. */
export function toWireError(error: unknown, req?: Request): WireError {
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

function errorHandler(logger: Logger | undefined): ErrorRequestHandler {
  return (error, req, res, _next) => {
    const wire = toWireError(error, req);
    if (wire.status >= 500 && wire.kind !== "unavailable") {
      const cause = wire.details.cause ?? error;
      logger?.error(
        {
          err:
            cause instanceof Error ? { name: cause.name, message: cause.message, stack: cause.stack } : String(cause),
          method: req.method,
          path: shorten(req.path, 256),
        },
        wire.message,
      );
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    for (const [name, value] of Object.entries(wire.details.headers ?? {})) res.setHeader(name, value);
    res.status(wire.status).json(wire.toBody());
  };
}
