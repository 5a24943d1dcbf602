/** The node:http adapter: the whole HTTP contract on a plain request listener, checked by the validators precompiled from the spec. */
import type { IncomingMessage, RequestListener, ServerResponse } from "node:http";
import { gunzipSync } from "node:zlib";
import {
  type CallToolResponse,
  OXP_VERSION,
  type Validator,
  validateAuthorizationChallengeCheckResponse,
  validateCallToolResponse,
  validateCallToolResultEnvelope,
  validateServerErrorResponse,
  validateToolListResponse,
  validateValidationErrorResponse,
} from "@otc/types";
import { checkCallBody, wrapResponse } from "../core/call-body.js";
import { shorten, WireError } from "../core/errors.js";
import { JsonScanner } from "../core/json-limits.js";
import { checkOxpVersionHeader } from "../core/protocol-version.js";
import { createHostCheck } from "./allowed-hosts.js";
import {
  type AdapterOptions,
  adapterRuntime,
  admissionError,
  bodyTooLarge,
  checkBodyFraming,
  clientOf,
  firstHeader,
  healthAnswer,
  isJsonType,
  logFailedAuthentication,
  type OxpRuntime,
  type PageHandler,
  type ProtocolRoute,
  protocolRouteOf,
  RequestCallMeta,
  requestPath,
  toolListAnswer,
  toWireError,
  trackInFlight,
  writeJson,
} from "./contract.js";

/** Options of {@link createHandler}: those of `createServer`, with pages as node-style handlers. */
export interface HandlerOptions extends AdapterOptions {
  /**
   * Handlers served beside the protocol routes without server authentication (an authorization
   * provider's consent pages, the Inspector). Each gets the request first for any path that is not a
   * protocol route and calls `next()` when it does not serve it. An Express app or router fits
   * (`(req, res, next) => app(req, res, next)`). Their errors are answered in JSON with `OXP-Version`.
   */
  pages?: readonly PageHandler[];
}

/** A node:http request listener serving OXP, with its runtime for `listen`. */
export type OxpHandler = RequestListener & { readonly oxp: OxpRuntime };

/**
 * Reads a request body (its framing already checked) up to `limit` bytes, its shape judged chunk by chunk as it
 * comes: a 413 once past the limit, a 400 once past a shape bound; either way the rest is never read. The time
 * spent judging it is added to `spent.ms`.
 */
function readBody(req: IncomingMessage, limit: number, scanner: JsonScanner, spent: { ms: number }): Promise<Buffer> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    const cleanup = () => {
      req.off("data", onData);
      req.off("end", onEnd);
      req.off("error", onError);
    };
    const onData = (chunk: Buffer) => {
      size += chunk.length;
      if (size > limit) {
        cleanup();
        req.pause();
        reject(bodyTooLarge(limit));
        return;
      }
      const started = performance.now();
      try {
        scanner.push(chunk);
      } catch (error) {
        cleanup();
        req.pause();
        // What is left of the body is not read: the connection cannot carry another request.
        if (error instanceof WireError) error.details.headers = { ...error.details.headers, Connection: "close" };
        reject(error);
        return;
      } finally {
        spent.ms += performance.now() - started;
      }
      chunks.push(chunk);
    };
    // Nothing follows `end`: the listeners go with the request, unremoved.
    const onEnd = () => {
      resolve(chunks.length === 1 ? (chunks[0] as Buffer) : Buffer.concat(chunks));
    };
    const onError = (error: Error) => {
      cleanup();
      reject(error);
    };
    req.on("data", onData);
    req.on("end", onEnd);
    req.on("error", onError);
  });
}

/** Parses a JSON body (any JSON value; a leading BOM tolerated); 400 when it is empty or not JSON. */
function parseJson(bytes: Buffer): unknown {
  const text = bytes.toString("utf8");
  const body = text.charCodeAt(0) === 0xfeff ? text.slice(1) : text;
  try {
    return JSON.parse(body);
  } catch (error) {
    if (/^\s*$/.test(body)) {
      throw new WireError("bad_request", "The request has no body", { developerMessage: "Send a CallToolRequest." });
    }
    throw new WireError("bad_request", "The request body is not valid JSON", { cause: error });
  }
}

/** The spec's schema for a response, by route and status: what `validateResponses` checks against. */
function responseValidator(
  route: ProtocolRoute["name"] | undefined,
  status: number,
  envelope: boolean,
): Validator<unknown> | undefined {
  if (status === 304 || status === 204) return undefined;
  if (status === 422) return validateValidationErrorResponse;
  if (status !== 200) return validateServerErrorResponse;
  switch (route) {
    case "call":
      return envelope ? validateCallToolResultEnvelope : validateCallToolResponse;
    case "tools":
      return validateToolListResponse;
    case "check":
      return validateAuthorizationChallengeCheckResponse;
    default:
      return undefined;
  }
}

/**
 * Creates a node:http request listener that serves the given tools over OXP: the same contract as
 * `createServer` (docs/protocol.md, every rule) without Express, for the lowest cost per call. Run
 * it with `listen`, or hand it to any `http.createServer`.
 *
 * @example
 * const handler = createHandler({ tools: [add] });
 * await listen(handler, { port: 8080 });
 */
export function createHandler(options: HandlerOptions): OxpHandler {
  const { pages: _pages, ...adapterOptions } = options;
  const { logger, telemetry, core, authenticate, lifecycle, tracing, jsonLimits, budget, publicUrl, limit, cors } =
    adapterRuntime(adapterOptions);
  const pages = [...(telemetry?.pages ?? []), ...(options.pages ?? [])];
  const validateResponses = options.validateResponses ?? false;

  /** Writes a JSON answer; with `validateResponses`, one off the spec becomes a 500. */
  const send = (
    res: ServerResponse,
    status: number,
    body: string | Buffer,
    route?: ProtocolRoute["name"],
    envelope = false,
    headers?: Record<string, string>,
  ) => {
    if (validateResponses) {
      const validate = responseValidator(route, status, envelope);
      // A Buffer is the gzipped tool list.
      if (validate && !validate(JSON.parse(typeof body === "string" ? body : gunzipSync(body).toString("utf8")))) {
        logger?.error({ status, errors: validate.errors }, "response does not match the OXP specification");
        status = 500;
        body = JSON.stringify({ message: "The server produced a response that does not match the OXP specification" });
        headers = undefined;
      }
    }
    writeJson(res, status, body, headers);
  };

  const fail = (req: IncomingMessage, res: ServerResponse, error: unknown) => {
    const wire = toWireError(error);
    if (wire.status >= 500 && wire.kind !== "unavailable") {
      const cause = wire.details.cause ?? error;
      logger?.error(
        {
          err:
            cause instanceof Error ? { name: cause.name, message: cause.message, stack: cause.stack } : String(cause),
          method: req.method,
        },
        wire.message,
      );
    }
    if (res.headersSent) {
      res.end();
      return;
    }
    send(res, wire.status, JSON.stringify(wire.toBody()), undefined, false, wire.details.headers);
  };

  /** Who sent the request: at once for an API key or a remembered JWT, through a promise otherwise; never throws. */
  const principalOf = (req: IncomingMessage): string | Promise<string> => {
    if (!authenticate) return "anonymous";
    const refused = (error: unknown) => {
      logFailedAuthentication(logger, error, req);
      return Promise.reject(error);
    };
    try {
      const principal = authenticate({
        apiKey: firstHeader(req.headers["oxp-api-key"]),
        authorization: firstHeader(req.headers.authorization),
      });
      return typeof principal === "string" ? principal : principal.catch(refused);
    } catch (error) {
      return refused(error);
    }
  };

  const serveCall = async (req: IncomingMessage, res: ServerResponse, principal: string) => {
    if (!isJsonType(req.headers["content-type"])) {
      throw new WireError("unsupported_media_type", "The request body must be JSON", {
        developerMessage: "Send the body with Content-Type: application/json.",
      });
    }
    checkBodyFraming(req, limit);
    // Before the body is read: a client over its share of the server's time waits its turn (429).
    const client = clientOf(principal, req);
    budget?.admit(client);
    // Shape bounds on the bytes as they come: a hostile shape is refused before JSON.parse builds it.
    const scanner = new JsonScanner(jsonLimits);
    const spent = { ms: 0 };
    let parsed: ReturnType<typeof checkCallBody>;
    try {
      const bytes = await readBody(req, limit, scanner, spent);
      const checking = performance.now();
      try {
        const body = parseJson(bytes);
        // Step 3 of docs/protocol.md 3.3, after size and media type: the version, then the body's shape.
        checkOxpVersionHeader(firstHeader(req.headers["oxp-version"]));
        parsed = checkCallBody(body);
      } finally {
        spent.ms += performance.now() - checking;
      }
    } finally {
      budget?.charge(client, spent.ms);
    }
    const { request, envelope } = parsed;
    const meta = new RequestCallMeta({
      principal,
      client,
      req,
      res,
      tracing,
      publicUrl,
      budget,
      bodyValues: scanner.values,
    });
    // What the core does before its first wait (resolving, checking, and the whole run of a synchronous tool
    // without a call_id) is measured here; what it does after a wait, it charges through the meta.
    const calling = performance.now();
    const answer: Promise<CallToolResponse> = telemetry?.traceCall
      ? telemetry.traceCall(req, res, (onEnd) => {
          meta.onEnd = onEnd;
          return core.call(request, meta);
        })
      : core.call(request, meta);
    budget?.charge(client, performance.now() - calling);
    const response = await answer;
    const answering = performance.now();
    send(res, 200, JSON.stringify(wrapResponse(response, envelope)), "call", envelope);
    // Serializing and writing a large answer is the client's cost too.
    budget?.charge(client, performance.now() - answering);
  };

  const serveRoute = async (req: IncomingMessage, res: ServerResponse, route: ProtocolRoute) => {
    const method = req.method ?? "GET";
    if (route.name === "health") {
      if (!route.methods.includes(method)) throw methodNotAllowed(route.methods);
      checkOxpVersionHeader(firstHeader(req.headers["oxp-version"]));
      const { status, body } = healthAnswer(lifecycle);
      send(res, status, JSON.stringify(body), "health");
      return;
    }
    const found = principalOf(req);
    const principal = typeof found === "string" ? found : await found;
    if (!route.methods.includes(method)) throw methodNotAllowed(route.methods);
    if (route.name === "call") return serveCall(req, res, principal);
    checkOxpVersionHeader(firstHeader(req.headers["oxp-version"]));
    if (route.name === "tools") {
      const { status, body, headers } = toolListAnswer(core, req, res);
      if (status === 304 || body === undefined) {
        res.writeHead(304, { ...headers, "OXP-Version": OXP_VERSION });
        res.end();
        return;
      }
      send(res, 200, body, "tools", false, headers);
      return;
    }
    if (route.name === "check") {
      let challengeId: string;
      try {
        challengeId = decodeURIComponent(route.segment);
      } catch (error) {
        throw toWireError(error);
      }
      send(res, 200, JSON.stringify(await core.checkChallenge(challengeId)), "check");
    }
  };

  /** A path no protocol route serves: the pages in turn, then (authenticated, like any route) a 404. */
  const servePages = (req: IncomingMessage, res: ServerResponse, path: string | undefined) => {
    let index = 0;
    const next = (error?: unknown) => {
      if (error !== undefined && error !== null) {
        fail(req, res, error);
        return;
      }
      const page = pages[index++];
      if (page) {
        // Each page may pass the request on once; an async page's rejection is its error.
        let passed = false;
        const once = (failure?: unknown) => {
          if (passed) return;
          passed = true;
          next(failure);
        };
        try {
          const result: unknown = page(req, res, once);
          if (result instanceof Promise) result.catch((thrown: unknown) => once(thrown ?? new Error("page failed")));
        } catch (thrown) {
          once(thrown ?? new Error("page failed"));
        }
        return;
      }
      Promise.resolve(principalOf(req)).then(
        () =>
          fail(
            req,
            res,
            new WireError("not_found", "Not found", {
              developerMessage: `Nothing is served at ${req.method} ${path === undefined ? "this target" : shorten(path)}.`,
            }),
          ),
        (error) => fail(req, res, error),
      );
    };
    next();
  };

  const dispatch = (req: IncomingMessage, res: ServerResponse) => {
    const path = requestPath(req.url ?? "/");
    const route = path === undefined ? undefined : protocolRouteOf(path);
    if (!route) {
      res.setHeader("OXP-Version", OXP_VERSION);
      servePages(req, res, path);
      return;
    }
    serveRoute(req, res, route).catch((error: unknown) => fail(req, res, error));
  };

  const hostAllowed = createHostCheck(options.allowedHosts, options.publicUrl);
  const handler: RequestListener = (req, res) => {
    // Answers written here carry OXP-Version through `send`; pages and CORS get it set up front (see below).
    trackInFlight(lifecycle, res);
    const refused = admissionError(req, lifecycle, res, hostAllowed);
    if (refused) {
      fail(req, res, refused);
      return;
    }
    if (cors) {
      res.setHeader("OXP-Version", OXP_VERSION);
      cors(req, res, (error) => (error ? fail(req, res, error) : dispatch(req, res)));
    } else dispatch(req, res);
  };
  return Object.assign(handler, { oxp: { lifecycle, core } });
}

function methodNotAllowed(methods: readonly string[]): WireError {
  return new WireError("method_not_allowed", "This method is not allowed here", {
    headers: { Allow: methods.join(", ") },
  });
}
