/**
 * The one request pipeline every adapter runs (node:http, Express, fetch): the spine of every request, in the
 * order of docs/protocol.md 3.3 (see {@link Pipeline.handle}), each protocol route in its own module under
 * `routes/`. An adapter only translates its host's request into an {@link Exchange} and writes the {@link Answer}
 * back. Runtime-neutral: no `node:` module.
 */
import { OXP_VERSION } from "@otc/types";
import { createVault } from "../connections/options.js";
import { CALLBACK_PATH, type ConnectionVault } from "../connections/vault.js";
import { MemoryTokenStore } from "../core/authorization.js";
import { systemClock } from "../core/clock.js";
import { ServerConfigError, shorten, toWireError, WireError } from "../core/errors.js";
import { EXTENSIONS, type ExtensionId, type ExtensionSet } from "../core/extensions.js";
import { isPending, type OrPromise } from "../core/fast-path.js";
import { DEFAULT_MAX_DEPTH, DEFAULT_MAX_VALUES, type JsonLimits } from "../core/json-limits.js";
import { type CallLineSink, type CallObserver, type CoreLogger, OxpCore } from "../core/oxp-core.js";
import { createHostCheck } from "./allowed-hosts.js";
import { checkedAnswers, jsonAnswer, NO_HEADERS, withHeaders } from "./answers.js";
import { type Admission, ANONYMOUS, createAuthenticator } from "./authentication.js";
import { ClientBudget } from "./client-budget.js";
import { ClientKeys } from "./client-key.js";
import { createCors } from "./cors.js";
import type { Answer, Exchange } from "./exchange.js";
import { CALL_SCOPE, OAuthResource, READ_SCOPE } from "./oauth.js";
import type { AdapterOptions, OxpLifecycle, OxpRuntime } from "./options.js";
import { bodyLimitBytes } from "./request-body.js";
import { callRoute } from "./routes/call.js";
import { checkRoute } from "./routes/check.js";
import { connectionsRoute } from "./routes/connections.js";
import { asksFor, methodNotAllowed, type RouteContext, type RouteHandler } from "./routes/context.js";
import { healthRoute } from "./routes/health.js";
import { resourceMetadataRoute } from "./routes/resource-metadata.js";
import { tasksRoute } from "./routes/tasks.js";
import { toolkitsRoute } from "./routes/toolkits.js";
import { toolsRoute } from "./routes/tools.js";
import {
  CONNECTION_ROUTES,
  type ProtocolRoute,
  protocolRouteOf,
  type RouteName,
  SEARCH_ROUTES,
  TASK_ROUTES,
  withoutTrailingSlash,
} from "./routes.js";
import { pathOf } from "./url.js";

/**
 * A host's own contract check of a request (Express: express-openapi-validator), run where the pipeline would
 * check `OXP-Version` and the call body itself: throws what it finds wrong. The pipeline then does not check
 * them again: one validator per path.
 */
export type ContractCheck = (exchange: Exchange, route: RouteName, body: unknown) => void | Promise<void>;

/** What an adapter adds to the options. */
export interface PipelineHost {
  /** The logger when the options name none (the adapter's default). */
  defaultLogger?: () => CoreLogger;
  /**
   * The call-line sink of a logger the adapter made (http/logger.ts's `callLineSink`), if it has one: the core
   * writes each call's line through it rather than the logger's `info` (see {@link CallLineSink}).
   */
  callLineOf?: (logger: CoreLogger) => CallLineSink | undefined;
  /** The host's contract check, replacing the pipeline's own version and body checks. */
  contract?: ContractCheck;
}

/** The pipeline of one server: its runtime for `listen`, and the function that answers a request. */
export interface Pipeline {
  readonly runtime: OxpRuntime;
  readonly logger: CoreLogger | undefined;
  /**
   * Answers one request; undefined when a host page answered it itself. The steps, in order:
   * 1. admission: exactly one Host, a Host the server answers to, not draining (400, 400, 503);
   * 2. CORS: a preflight is answered, other requests get their headers;
   * 3. routing: a path that names no protocol route goes to the pages, then (authenticated) a 404;
   * 4. `/health`: method (405), `OXP-Version`, readiness (routes/health.ts);
   * 5. authentication (401), then the method (405 with `Allow`; HEAD wherever GET);
   * 6. `POST /tools/call`: media type (415), framing and declared size (413, 415), the client's share (429),
   *    the body read and bounded as it comes (413, 400), parsed (400), `OXP-Version` and the body's shape
   *    (400), the core's call (its own steps: docs/protocol.md 3.3 from the tool's resolution on), the answer
   *    (routes/call.ts);
   * 7. `GET /tools`: `OXP-Version`, the list with its ETag (304) and gzip (routes/tools.ts);
   * 8. a check_url: `OXP-Version`, the challenge id decoded (400), its status (routes/check.ts);
   * and the tasks extension's routes after step 5 (routes/tasks.ts).
   * Anything thrown becomes its wire error in {@link Pipeline.fail}, the one place a fault is logged.
   */
  handle(exchange: Exchange): Promise<Answer | undefined>;
  /** The answer to an error: its status and JSON body, logged when it is the server's fault (5xx but 503). */
  fail(exchange: Pick<Exchange, "method" | "path">, error: unknown, headers?: Record<string, string>): Answer;
}

/** Creates the pipeline for an adapter's options. */
export function createPipeline(options: AdapterOptions, host: PipelineHost = {}): Pipeline {
  const logger = options.logger === false ? undefined : (options.logger ?? host.defaultLogger?.());
  const { logger: _logger, telemetry, pages: _pages, ...coreOptions } = options;
  const observer = combinedObserver(options.observer, telemetry?.observer);
  const callLine = logger && host.callLineOf?.(logger);
  // The vault's providers are authorization providers of the core's, and its tokens are read through the core's
  // token store (docs/protocol.md 9.7): calls meet their requirements from it as section 4 says.
  const publicUrl = options.publicUrl?.replace(/\/+$/, "");
  const vault =
    options.connections && createVault(options.connections, options.clock ?? systemClock, logger, publicUrl);
  const core = new OxpCore({
    ...coreOptions,
    ...(vault
      ? {
          authorizationProviders: [...(options.authorizationProviders ?? []), ...vault.authorizationProviders()],
          tokenStore: vault.tokenStore(options.tokenStore ?? new MemoryTokenStore()),
        }
      : {}),
    ...(logger ? { logger } : {}),
    ...(callLine ? { callLine } : {}),
    ...(observer ? { observer } : {}),
  });
  const oauth =
    options.auth?.oauth === undefined
      ? undefined
      : new OAuthResource(options.auth.oauth, options.publicUrl, logger, core.clock);
  const authenticate = createAuthenticator(options.auth, logger, core.clock, oauth);
  /** The lifecycle's state; the runtime hands out a view of it (readiness alone may be set from outside). */
  const lifecycle = { ready: true, draining: false, inFlight: 0 };
  const limits = jsonLimits(options);
  const budget = options.fairness === false ? undefined : new ClientBudget(options.fairness);
  const bodyLimit = bodyLimitBytes(options.bodyLimit);
  const cors = createCors(options.cors);
  const hostAllowed = createHostCheck(options.allowedHosts, options.publicUrl);
  const pages = [...(vault ? [vaultCallbackPage(vault)] : []), ...(telemetry?.pages ?? []), ...(options.pages ?? [])];
  const context: RouteContext = {
    core,
    answer: checkedAnswers(options.validateResponses ?? false, logger),
    limits,
    bodyLimit,
    budget,
    clients: new ClientKeys(),
    offered: offeredExtensions(options.extensions, configuredExtension(options)),
    contract: host.contract,
    telemetry,
    tracing: options.tracing ?? true,
    publicUrl,
    oauth,
    vault,
    acceptClientTokens: options.connections?.acceptClientTokens !== false,
    cache: {
      maxAgeSeconds: cacheMaxAge(options.cache?.maxAgeSeconds),
      // A shared cache must never hand a list to a caller the server did not admit (9.9, `[cache.control]`).
      listScope: authenticate ? "private" : "public",
    },
  };
  if (context.offered.has("search")) {
    // The index is built with the server, not by the first search (9.5, `[search.bounds]`).
    core.catalog.search();
  }
  const serveHealth = healthRoute(context, lifecycle);
  const serveResourceMetadata = oauth && resourceMetadataRoute(context, oauth);
  const task = tasksRoute(context, options);
  const connections = vault ? connectionsRoute(context, vault) : noRoute;
  /** Steps 6-8 and the tasks extension's routes, by name. */
  const routes: Record<Exclude<RouteName, "health" | "discovery" | "resource">, RouteHandler> = {
    call: callRoute(context),
    tools: toolsRoute(context),
    toolkits: toolkitsRoute(context),
    check: checkRoute(context),
    status: task,
    events: task,
    connections,
    connection: connections,
  };

  const fail: Pipeline["fail"] = (exchange, error, headers) => {
    const wire = toWireError(error);
    if (wire.status >= 500 && wire.kind !== "unavailable") {
      const cause = wire.details.cause ?? error;
      logger?.error(
        {
          err:
            cause instanceof Error ? { name: cause.name, message: cause.message, stack: cause.stack } : String(cause),
          method: exchange.method,
          path: exchange.path === undefined ? undefined : shorten(exchange.path, 256),
        },
        wire.message,
      );
    }
    return jsonAnswer(wire.status, JSON.stringify(wire.toBody()), { ...headers, ...wire.details.headers });
  };

  /**
   * Who sent the request: at once for an API key or a remembered JWT, through a promise otherwise. `scopes` are
   * what the route needs of an OAuth access token, named in a 401's challenge where the oauth extension is on.
   */
  const admissionOf = (exchange: Exchange, scopes: readonly string[]): OrPromise<Admission> => {
    if (!authenticate) {
      return ANONYMOUS;
    }
    const refused = (error: unknown): never => {
      if (error instanceof WireError && error.kind === "unauthorized") {
        // Who tried and why, never what they sent.
        logger?.warn(
          { reason: error.details.developerMessage, remote_address: exchange.remoteAddress, method: exchange.method },
          "authentication failed",
        );
        if (oauth) {
          const tokenSent = exchange.header("authorization") !== undefined;
          error.details.headers = {
            ...error.details.headers,
            "WWW-Authenticate": oauth.unauthorizedChallenge(scopes, tokenSent),
          };
        }
      }
      throw error;
    };
    try {
      const admission = authenticate({
        apiKey: exchange.header("oxp-api-key"),
        authorization: exchange.header("authorization"),
      });
      return isPending(admission) ? admission.catch(refused) : admission;
    } catch (error) {
      return refused(error);
    }
  };

  /** Where the Host check keeps its verdict for requests that come without a connection. */
  const hostVerdicts = {};

  /** Step 1: the check every request passes first. */
  const admission = (exchange: Exchange): WireError | undefined => {
    const hosts = exchange.hostHeaders ? exchange.hostHeaders() : 1;
    if (hosts !== 1) {
      return new WireError("bad_request", "The request must carry exactly one Host header", {
        developerMessage: `It carried ${hosts}.`,
      });
    }
    const host = exchange.header("host");
    const { localAddress, remoteAddress } = exchange;
    // Without a connection (a fetch host), the check remembers the last Host it let in on the pipeline's behalf: it
    // remembers only a Host its name rules accept, whoever sent it, so the verdict is the same.
    const connection = exchange.connection ?? hostVerdicts;
    if (hostAllowed && !hostAllowed({ host, localAddress, remoteAddress, connection })) {
      // A 400, which the spec declares on every route: the request names a server this is not.
      return new WireError("bad_request", "The request's Host does not name this server", {
        developerMessage: `Host '${shorten(host ?? "")}' is not among the server's allowedHosts.`,
      });
    }
    if (lifecycle.draining) {
      return new WireError("unavailable", "The server is shutting down", {
        developerMessage: "Retry on another instance.",
        headers: { Connection: "close" },
      });
    }
    return undefined;
  };

  /** Step 3, for a path no protocol route serves: the host's pages, the fetch pages, then (authenticated) a 404. */
  const servePages = async (exchange: Exchange, headers: Record<string, string>): Promise<Answer | undefined> => {
    if (exchange.hostPages && (await exchange.hostPages(headers))) {
      return undefined;
    }
    const request = pages.length > 0 && exchange.path !== undefined ? requestOf(exchange) : undefined;
    // A page matches on the URL's path, which resolves dot segments: `/a/../tools` would reach it as `/tools`, a
    // protocol route it must never answer. Such a target is no page's.
    if (request && pathOf(request.url) === exchange.path) {
      for (const page of pages) {
        const response = await page(request);
        if (response) {
          return { status: response.status, headers: {}, response: withHeaders(response, headers) };
        }
      }
    }
    await admissionOf(exchange, EVERY_SCOPE);
    const target = exchange.path === undefined ? "this target" : shorten(exchange.path);
    throw new WireError("not_found", "Not found", {
      developerMessage: `Nothing is served at ${exchange.method} ${target}.`,
    });
  };

  /**
   * Steps 4-8 for a protocol route: `/health` before authentication, the others after it. Not itself async: a
   * call authenticated at once (no credentials, an API key, a remembered JWT) reaches its route without a wait.
   */
  const serveRoute = (exchange: Exchange, route: ProtocolRoute, headers: Record<string, string>): OrPromise<Answer> => {
    if (route.name === "health" || route.name === "discovery") {
      return serveHealth(exchange, route, headers);
    }
    if (route.name === "resource") {
      return (serveResourceMetadata as NonNullable<typeof serveResourceMetadata>)(exchange, route, headers);
    }
    const found = admissionOf(exchange, READ_ROUTES.has(route.name) ? READ_ONLY : CALL_ONLY);
    return isPending(found)
      ? found.then((admission) => serveAuthenticated(exchange, route, admission, headers))
      : serveAuthenticated(exchange, route, found, headers);
  };

  /**
   * Steps 5-8 once the client is known: the method, an access token's scopes for the route (a call's are checked
   * once its tool is known, by the core), then the route.
   */
  const serveAuthenticated: RouteHandler = (exchange, route, admission, headers) => {
    if (!route.methods.includes(exchange.method)) {
      throw methodNotAllowed(route.methods);
    }
    if (admission.grant && route.name !== "call") {
      const needed = READ_ROUTES.has(route.name) ? READ_ONLY : CALL_ONLY;
      if (!needed.every((scope) => admission.grant?.scopes.has(scope))) {
        throw (oauth as OAuthResource).insufficientScope(needed);
      }
    }
    return routes[route.name as keyof typeof routes](exchange, route, admission, headers);
  };

  const handle = async (exchange: Exchange): Promise<Answer | undefined> => {
    lifecycle.inFlight++;
    // A tracing telemetry adds `traceparent` to the answer's headers, error answers included: it gets an object of
    // this request's own.
    let headers = telemetry?.traceCall ? {} : NO_HEADERS;
    try {
      const refused = admission(exchange);
      if (refused) {
        throw refused;
      }
      if (cors) {
        const verdict = cors(exchange.method, exchange.header("origin"));
        if (verdict.preflight) {
          return { status: 204, headers: { ...verdict.headers, "OXP-Version": OXP_VERSION } };
        }
        headers = verdict.headers;
      }
      const path = exchange.path;
      let route = path === undefined ? undefined : protocolRouteOf(path);
      // The tasks extension's paths exist only for a request that asks for it: for any other, they are unknown.
      if (route && TASK_ROUTES.has(route.name) && !asksFor(context, exchange, "tasks")) {
        route = undefined;
      }
      // So is the search extension's.
      if (route && SEARCH_ROUTES.has(route.name) && !asksFor(context, exchange, "search")) {
        route = undefined;
      }
      // A call's answers are never kept by a cache that was told of them (9.9, `[cache.no-store]`).
      if (route?.name === "call" && asksFor(context, exchange, "cache")) {
        headers = { ...headers, "Cache-Control": "no-store" };
      }
      // So are the connections extension's, on a server with a vault.
      if (route && CONNECTION_ROUTES.has(route.name) && !(vault && asksFor(context, exchange, "connections"))) {
        route = undefined;
      }
      // The resource metadata exists on a server with the oauth extension, at the paths its canonical URL gives.
      if (
        route?.name === "resource" &&
        !(oauth && path !== undefined && oauth.metadataPaths.has(withoutTrailingSlash(path)))
      ) {
        route = undefined;
      }
      if (!route) {
        return await servePages(exchange, { ...headers, "OXP-Version": OXP_VERSION });
      }
      const served = serveRoute(exchange, route, headers);
      return isPending(served) ? await served : served;
    } catch (error) {
      return fail(exchange, error, headers);
    } finally {
      lifecycle.inFlight--;
    }
  };

  const view: OxpLifecycle = {
    get ready() {
      return lifecycle.ready;
    },
    set ready(ready: boolean) {
      lifecycle.ready = ready;
    },
    get draining() {
      return lifecycle.draining;
    },
    get inFlight() {
      return lifecycle.inFlight;
    },
  };
  const runtime: OxpRuntime = {
    lifecycle: view,
    drain: () => {
      lifecycle.draining = true;
    },
    abortAll: () => core.abortAll(),
    clock: core.clock,
  };
  return { runtime, logger, handle, fail };
}

/** The exchange as a `Request` for the pages, or undefined when its target makes no URL (`*`, a bad authority): no page's. */
function requestOf(exchange: Exchange): Request | undefined {
  try {
    return exchange.toRequest();
  } catch {
    return undefined;
  }
}

/** The handler of a route a server without its extension never reaches (the pipeline answers its path as unknown). */
const noRoute: RouteHandler = () => Promise.reject(new Error("this route is not served"));

/** The page a connection provider sends the user's browser back to (docs/protocol.md 9.7): GET only. */
function vaultCallbackPage(vault: ConnectionVault) {
  return (request: Request): Promise<Response> | undefined =>
    request.method === "GET" && pathOf(request.url) === CALLBACK_PATH ? vault.callback(request) : undefined;
}

/** The scopes of the routes, for challenges and checks (docs/protocol.md 9.6, `[oauth.scopes]`). */
const READ_ONLY: readonly string[] = [READ_SCOPE];
const CALL_ONLY: readonly string[] = [CALL_SCOPE];
const EVERY_SCOPE: readonly string[] = [READ_SCOPE, CALL_SCOPE];
/** The routes that need only `oxp:tools:read`: the catalog's. */
const READ_ROUTES: ReadonlySet<RouteName> = new Set(["tools", "toolkits"]);

/** The cache extension's `max-age`, in whole seconds (default 60). */
function cacheMaxAge(seconds: number | undefined): number {
  if (seconds === undefined) {
    return 60;
  }
  if (!Number.isSafeInteger(seconds) || seconds < 0) {
    throw new ServerConfigError("cache.maxAgeSeconds must be a whole number of seconds, 0 or more");
  }
  return seconds;
}

/**
 * Whether the options configure what an extension needs: `oauth` its authorization servers, `connections` its
 * vault; the others need nothing.
 */
export function configuredExtension(options: Pick<AdapterOptions, "auth" | "connections">) {
  return (id: ExtensionId): boolean =>
    (id !== "oauth" || options.auth?.oauth !== undefined) &&
    (id !== "connections" || options.connections !== undefined);
}

/**
 * The extensions a server offers for its `extensions` option: those implemented and `configured`, or none for
 * `false`. An extension named in the option but not configured is a ServerConfigError.
 */
function offeredExtensions(
  option: AdapterOptions["extensions"],
  configured: (id: ExtensionId) => boolean,
): ExtensionSet {
  if (option === false) {
    return new Set();
  }
  const implemented: readonly ExtensionId[] = EXTENSIONS;
  if (option === undefined) {
    return new Set(implemented.filter(configured));
  }
  for (const id of option) {
    if (!implemented.includes(id)) {
      throw new ServerConfigError(
        `The extension '${String(id)}' is not one this server implements: ${implemented.join(", ")}`,
      );
    }
    if (id === "oauth" && !configured(id)) {
      throw new ServerConfigError("The extension 'oauth' needs auth.oauth: the authorization servers to accept");
    }
    if (id === "connections" && !configured(id)) {
      throw new ServerConfigError("The extension 'connections' needs the connections option: its providers and keys");
    }
  }
  return new Set(EXTENSIONS.filter((id) => option.includes(id)));
}

function jsonLimits(options: AdapterOptions): JsonLimits {
  const limits = {
    maxDepth: options.maxDepth ?? DEFAULT_MAX_DEPTH,
    maxValues: options.maxValues ?? DEFAULT_MAX_VALUES,
  };
  for (const [name, value] of Object.entries(limits)) {
    if (!(Number.isSafeInteger(value) && value > 0)) {
      throw new ServerConfigError(`${name} must be a positive integer`);
    }
  }
  return limits;
}

/** The observer the core gets: the `observer` option and the telemetry's, both told of everything. */
function combinedObserver(...observers: (CallObserver | undefined)[]): CallObserver | undefined {
  const present = observers.filter((observer): observer is CallObserver => observer !== undefined);
  if (present.length <= 1) {
    return present[0];
  }
  return {
    callStarted: () => {
      for (const observer of present) {
        observer.callStarted?.();
      }
    },
    callEnded: (event) => {
      for (const observer of present) {
        observer.callEnded?.(event);
      }
    },
    challengeStarted: (providerId) => {
      for (const observer of present) {
        observer.challengeStarted?.(providerId);
      }
    },
  };
}
