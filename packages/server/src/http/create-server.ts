/** The Express 5 adapter: the HTTP contract (auth, versions, bodies, spec validation, errors) around the core. */

import { OXP_VERSION, openapiDocument } from "@otc/types";
import express, {
  type ErrorRequestHandler,
  type Express,
  type Request,
  type RequestHandler,
  type Response,
} from "express";
import * as OpenApiValidator from "express-openapi-validator";
import type { Logger } from "pino";
import { type CallBody, unwrapCallBody, wrapResponse } from "../core/call-body.js";
import { shorten, WireError } from "../core/errors.js";
import { scanJson } from "../core/json-limits.js";
import { CHALLENGE_CHECK_PATH } from "../core/oxp-core.js";
import { createHostCheck } from "./allowed-hosts.js";
import {
  type AdapterOptions,
  adapterRuntime,
  admissionError,
  checkBodyFraming,
  clientOf,
  firstHeader,
  healthAnswer,
  isJsonType,
  logFailedAuthentication,
  type OxpRuntime,
  protocolRouteOf,
  RequestCallMeta,
  ROUTES,
  toolListAnswer,
  toWireError,
  trackInFlight,
  writeJson,
} from "./contract.js";

/** Options of {@link createServer}. */
export interface ServerOptions extends AdapterOptions {
  /**
   * Express handlers served beside the protocol routes without server authentication, such as an
   * authorization provider's consent pages (a browser opens them). They share the server's headers,
   * lifecycle and error handling: their errors are JSON with `OXP-Version`, never HTML or a stack.
   */
  pages?: readonly RequestHandler[];
}

/** An Express app serving OXP, with its runtime for {@link listen}. */
export type OxpApp = Express & { readonly oxp: OxpRuntime };

/** The spec's routes in Express's syntax (`:challenge_id` for `{challenge_id}`), for 405 and `Allow`. */
const EXPRESS_ROUTES = ROUTES.map((route) => ({ ...route, path: route.path.replace(/\{(\w+)\}/g, ":$1") }));

/**
 * Creates an Express app that serves the given tools over OXP. It can be mounted under a prefix in
 * another Express app; `listen` runs it with graceful shutdown.
 *
 * @example
 * const app = createServer({ tools: [add], auth: { apiKeys: [process.env.OXP_API_KEY!] } });
 * await listen(app, { port: 8080 });
 */
export function createServer(options: ServerOptions): OxpApp {
  const { pages: _pages, ...adapterOptions } = options;
  const { logger, telemetry, core, authenticate, lifecycle, tracing, jsonLimits, budget, publicUrl, limit, cors } =
    adapterRuntime(adapterOptions);

  const validateResponses = options.validateResponses ?? false;
  const app: OxpApp = Object.assign(express(), { oxp: { lifecycle, core } });
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  // One spelling per route: /TOOLS/CALL is not /tools/call.
  app.set("case sensitive routing", true);

  const pages = [...(telemetry?.pages ?? []), ...(options.pages ?? [])];
  // With neither CORS nor pages to come between them, admission and authentication share one layer: a router
  // step less per request.
  const oneLayer = !cors && pages.length === 0;
  const hostAllowed = createHostCheck(options.allowedHosts, options.publicUrl);
  app.use((req, res, next) => {
    res.setHeader("OXP-Version", OXP_VERSION);
    trackInFlight(lifecycle, res);
    const refused = admissionError(req, lifecycle, res, hostAllowed);
    if (refused || !oneLayer) next(refused);
    else guard(req, res, next);
  });
  if (cors) app.use(cors);

  // Synchronous unless a credential needs an asynchronous check (a JWT not yet verified): no promise per call.
  const authenticated: RequestHandler = (req, _res, next) => {
    const refused = (error: unknown) => {
      logFailedAuthentication(logger, error, req);
      next(error);
    };
    if (!authenticate) {
      req.oxpPrincipal = "anonymous";
      next();
      return;
    }
    let principal: string | Promise<string>;
    try {
      principal = authenticate({
        apiKey: firstHeader(req.headers["oxp-api-key"]),
        authorization: firstHeader(req.headers.authorization),
      });
    } catch (error) {
      refused(error);
      return;
    }
    if (typeof principal === "string") {
      req.oxpPrincipal = principal;
      next();
      return;
    }
    principal.then((found) => {
      req.oxpPrincipal = found;
      next();
    }, refused);
  };
  // Every route but /health is authenticated.
  const guard: RequestHandler = (req, res, next) =>
    protocolRouteOf(req.path)?.name === "health" ? next() : authenticated(req, res, next);
  // Pages serve what the protocol does not: they never see (nor shadow, unauthenticated) a protocol route.
  for (const page of pages) {
    app.use((req, res, next) => (protocolRouteOf(req.path) ? next() : page(req, res, next)));
  }
  if (!oneLayer) app.use(guard);

  // Framing (declared length, encoding, charset) is checked first, as the node:http adapter does: nothing inflated.
  // The bytes' shape bounds are checked before body-parser parses them (its `verify` hook sees the raw body).
  const jsonBody = express.json({
    limit,
    strict: false,
    type: () => true,
    inflate: false,
    verify: (req: Request, _res, bytes) => {
      req.oxpChecking = performance.now();
      req.oxpBodyValues = scanJson(bytes, jsonLimits);
    },
  });
  app.post("/tools/call", (req, res, next) => {
    if (!isJsonType(req.headers["content-type"])) {
      next(
        new WireError("unsupported_media_type", "The request body must be JSON", {
          developerMessage: "Send the body with Content-Type: application/json.",
        }),
      );
      return;
    }
    const client = clientOf(req.oxpPrincipal ?? "anonymous", req);
    req.oxpClient = client;
    try {
      checkBodyFraming(req, limit);
      // Before the body is read: a client over its share of the server's time waits its turn (429).
      budget?.admit(client);
    } catch (error) {
      next(error);
      return;
    }
    jsonBody(req, res, (error?: unknown) => {
      if (budget && req.oxpChecking !== undefined) budget.charge(client, performance.now() - req.oxpChecking);
      try {
        if (error) throw error;
        if (req.body === undefined) {
          throw new WireError("bad_request", "The request has no body", {
            developerMessage: "Send a CallToolRequest.",
          });
        }
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
      validateResponses,
      validateSecurity: false,
      ignoreUndocumented: true,
      validateApiSpec: false,
      // Match routes on the URL below the mount point, so the app can live under a prefix.
      useRequestUrl: true,
    }),
  );

  /** A JSON answer: through `res.json` when the validator checks responses (it hooks `res.json`), else written at once. */
  const sendJson = (res: Response, status: number, body: unknown, headers?: Record<string, string>) => {
    if (validateResponses) {
      for (const [name, value] of Object.entries(headers ?? {})) res.setHeader(name, value);
      res.status(status).json(body);
    } else {
      writeJson(res, status, JSON.stringify(body), headers);
    }
  };

  app.get("/health", (_req, res) => {
    const { status, body } = healthAnswer(lifecycle);
    sendJson(res, status, body);
  });

  app.get("/tools", (req, res) => {
    const { status, body, headers } = toolListAnswer(core, req, res);
    if (status === 304 || body === undefined) {
      res.writeHead(304, headers);
      res.end();
      return;
    }
    writeJson(res, 200, body, headers);
  });

  app.get(`${CHALLENGE_CHECK_PATH}/:challenge_id`, async (req, res, next) => {
    try {
      sendJson(res, 200, await core.checkChallenge(String(req.params.challenge_id)));
    } catch (error) {
      next(error);
    }
  });

  app.post("/tools/call", async (req, res, next) => {
    try {
      // express-openapi-validator passed the body as CallToolRequest or CallToolEnvelope.
      const { request, envelope } = unwrapCallBody(req.body as CallBody);
      const client = req.oxpClient ?? clientOf(req.oxpPrincipal ?? "anonymous", req);
      const meta = new RequestCallMeta({
        principal: req.oxpPrincipal ?? "anonymous",
        client,
        req,
        res,
        tracing,
        publicUrl,
        mountPath: req.baseUrl,
        budget,
        bodyValues: req.oxpBodyValues,
      });
      // What the core does before its first wait is measured here; what it does after one, it charges itself.
      const calling = performance.now();
      const answer = telemetry?.traceCall
        ? telemetry.traceCall(req, res, (onEnd) => {
            meta.onEnd = onEnd;
            return core.call(request, meta);
          })
        : core.call(request, meta);
      budget?.charge(client, performance.now() - calling);
      const response = await answer;
      const answering = performance.now();
      sendJson(res, 200, wrapResponse(response, envelope));
      budget?.charge(client, performance.now() - answering);
    } catch (error) {
      next(error);
    }
  });

  for (const route of EXPRESS_ROUTES) {
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
      new WireError("not_found", "Not found", {
        developerMessage: `Nothing is served at ${req.method} ${shorten(req.path)}.`,
      }),
    );
  });

  app.use(errorHandler(logger, sendJson));
  return app;
}

declare module "express-serve-static-core" {
  interface Request {
    /** Who the request was authenticated as (`anonymous` when authentication is off). */
    oxpPrincipal?: string;
    /** Who the per-client limits count the request against (`clientOf`). */
    oxpClient?: string;
    /** How many values the call body held (`scanJson`'s count). */
    oxpBodyValues?: number;
    /** When the call body's check began (`performance.now()`), to charge its time to the client's budget. */
    oxpChecking?: number;
  }
}

function errorHandler(
  logger: Logger | undefined,
  sendJson: (res: Response, status: number, body: unknown, headers?: Record<string, string>) => void,
): ErrorRequestHandler {
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
    sendJson(res, wire.status, wire.toBody(), wire.details.headers);
  };
}
