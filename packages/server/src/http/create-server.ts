/** The Express 5 adapter: an Express app that hands each request to the pipeline, express-openapi-validator as its contract check. */
import { openapiDocument, type paths } from "@otc/types";
import type { Express, Request, RequestHandler } from "express";
import { SPEC_MISMATCH_MESSAGE } from "../core/call-body.js";
import { shorten, WireError } from "../core/errors.js";
import { unsupportedVersion } from "../core/protocol-version.js";
import { callLineSink, createLogger } from "./logger.js";
import { NodeExchange, type PageHandler, writeAnswer } from "./node-exchange.js";
import { optionalPeer } from "./optional-peer.js";
import type { AdapterOptions, OxpRuntime } from "./options.js";
import { type ContractCheck, createPipeline } from "./pipeline.js";
import type { RouteName } from "./routes.js";

// Optional peers: a server on `@otc/server/node` or `/fetch` installs neither.
const { default: express } = await optionalPeer(() => import("express"), "express", "the Express adapter");
const OpenApiValidator = await optionalPeer(
  () => import("express-openapi-validator"),
  "express-openapi-validator",
  "the Express adapter",
);

/** Options of {@link createServer}: those of every adapter, plus Express handlers as pages. */
export interface ServerOptions extends AdapterOptions {
  /**
   * Express handlers (an app or router fits) served beside the protocol routes without server authentication,
   * before the fetch `pages`, such as an authorization provider's consent pages. They share the server's
   * headers, lifecycle and error handling: their errors are JSON with `OXP-Version`, never HTML or a stack.
   */
  nodePages?: readonly RequestHandler[];
}

/** An Express app serving OXP, with its runtime for `listen`. */
export type OxpApp = Express & { readonly oxp: OxpRuntime };

/**
 * Creates an Express app that serves the given tools over OXP. It can be mounted under a prefix in
 * another Express app; `listen` runs it with graceful shutdown.
 *
 * @example
 * const app = createServer({ tools: [add], auth: { apiKeys: [process.env.OXP_API_KEY!] } });
 * await listen(app, { port: 8080 });
 */
export function createServer(options: ServerOptions): OxpApp {
  const { nodePages, ...adapterOptions } = options;
  const pipeline = createPipeline(adapterOptions, {
    defaultLogger: createLogger,
    callLineOf: callLineSink,
    contract: openApiContract(),
  });
  const app = express();
  app.disable("x-powered-by");
  app.set("etag", false);
  app.set("query parser", "simple");
  app.use((req, res) => {
    const exchange = new NodeExchange(req, res, req.baseUrl, nodePages as readonly PageHandler[] | undefined);
    pipeline.handle(exchange).then(
      (answer) => {
        if (answer) {
          writeAnswer(res, answer);
        }
      },
      (error: unknown) => writeAnswer(res, pipeline.fail(exchange, error)),
    );
  });
  // The validator compiles the spec on its first request: `listen` makes that request itself before it reports ready.
  return Object.assign(app, { oxp: { ...pipeline.runtime, warmUp: true } });
}

/**
 * express-openapi-validator as the pipeline's contract check: the request (its `OXP-Version`, path and body)
 * against the spec, each error it reports mapped by its structured fields (`path`, `errorCode`).
 */
function openApiContract(): ContractCheck {
  // One validator per route, each given the spec with that route's path alone: the validator finds a request's
  // route by compiling the spec's paths one by one, every request, until one matches (about 2.3 us a path, and the
  // call sorts late among eleven). The pipeline has matched the route already. Each is made on its route's first request.
  const byRoute = new Map<RouteName, RequestHandler[]>();
  const middlewaresOf = (route: RouteName): RequestHandler[] => {
    let middlewares = byRoute.get(route);
    if (middlewares === undefined) {
      const path = SPEC_PATHS[route];
      const document = openapiDocument as { paths: Record<string, unknown> };
      const apiSpec = structuredClone({ ...document, paths: { [path]: document.paths[path] } });
      middlewares = OpenApiValidator.middleware({
        apiSpec: apiSpec as unknown as Parameters<typeof OpenApiValidator.middleware>[0]["apiSpec"],
        validateRequests: { allowUnknownQueryParameters: true },
        validateResponses: false,
        validateSecurity: false,
        ignoreUndocumented: true,
        validateApiSpec: false,
        // Match routes on the URL below the mount point, so the app can live under a prefix.
        useRequestUrl: true,
      }) as unknown as RequestHandler[];
      byRoute.set(route, middlewares);
    }
    return middlewares;
  };
  return async (exchange, route, body) => {
    const middlewares = middlewaresOf(route);
    const { req, res } = exchange as NodeExchange;
    const request = req as Request;
    if (body !== undefined) {
      request.body = body;
    }
    try {
      for (const middleware of middlewares) {
        await new Promise<void>((resolve, reject) => {
          middleware(request, res as never, (error?: unknown) => (error ? reject(error) : resolve()));
        });
      }
    } catch (error) {
      // Query parameters are the pagination extension's, which the pipeline checks itself, and only when asked.
      const problems = (error as { errors?: ValidatorProblem[] } | undefined)?.errors;
      if (problems && problems.length > 0 && problems.every((problem) => problem.path?.startsWith("/query/"))) {
        return;
      }
      throw contractError(error, exchange.header("oxp-version"), body);
    }
  };
}

/** The spec's path of each route. */
const SPEC_PATHS = {
  health: "/health",
  discovery: "/.well-known/oxp",
  resource: "/.well-known/oauth-protected-resource",
  tools: "/tools",
  toolkits: "/toolkits",
  call: "/tools/call",
  check: "/authorization/challenges/{challenge_id}",
  status: "/tools/calls/{call_id}",
  events: "/tools/calls/{call_id}/events",
  connections: "/connections",
  connection: "/connections/{connection_id}",
} as const satisfies Record<RouteName, keyof paths>;

/** One problem express-openapi-validator reports. */
interface ValidatorProblem {
  path?: string;
  message?: string;
  errorCode?: string;
}

/** The errorCodes of a oneOf's frame: each branch (flat request, envelope) reports, and only the branch sent matters. */
const BRANCH_NOISE = new Set(["oneOf.openapi.validation"]);

/** The protocol's answer to what express-openapi-validator found wrong. */
function contractError(error: unknown, version: string | undefined, body: unknown): WireError {
  const status = (error as { status?: unknown } | undefined)?.status;
  if (typeof status !== "number" || status >= 500) {
    return new WireError("internal", "Internal server error", { cause: error });
  }
  const problems: ValidatorProblem[] = (error as { errors?: ValidatorProblem[] }).errors ?? [];
  const paths = problems.map((problem) => (problem.path ?? "").toLowerCase());
  if (paths.includes("/headers/oxp-version")) {
    return unsupportedVersion(version ?? "");
  }
  if (paths.includes("/body/$schema")) {
    return unsupportedVersion(String((body as { $schema?: unknown })?.$schema));
  }
  // The envelope branch's "request is required" says nothing of a flat body; the flat branch's errors nothing of an envelope.
  const envelope = typeof body === "object" && body !== null && "request" in body;
  const relevant = problems.filter(
    (problem) =>
      !BRANCH_NOISE.has(problem.errorCode ?? "") &&
      (envelope
        ? (problem.path ?? "").startsWith("/body/request") || problem.path === "/body"
        : problem.path !== "/body/request"),
  );
  const lines = (relevant.length > 0 ? relevant : problems).map((problem) =>
    `${(problem.path ?? "").replace(/^\/body/, "body")} ${problem.message ?? ""}`.trim(),
  );
  return new WireError("bad_request", SPEC_MISMATCH_MESSAGE, {
    developerMessage: shorten([...new Set(lines)].slice(0, 5).join("; ") || "Invalid request", 512),
    cause: error,
  });
}
