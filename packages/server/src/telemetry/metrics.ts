/** Prometheus metrics of an OXP server (prom-client, given by the caller): calls, latency, calls in flight, replays, challenges, and the page serving them. */
import { constantTimeEqual, parseBearer } from "@otc/types";
import type { Logger } from "pino";
import type { Registry } from "prom-client";
import { ServerConfigError, WireError } from "../core/errors.js";
import type { CallObserver } from "../core/oxp-core.js";
import type { FetchPage } from "../http/options.js";
import { ROUTES } from "../http/routes.js";
import { DEFAULT_DURATION_BUCKETS, type MetricsOptions, type MetricsRegistry } from "./metrics-options.js";

/**
 * prom-client's module, loaded by `createTelemetry` only when metrics are asked for. Only this module names
 * prom-client's types, and no public declaration imports it (see metrics-options.ts).
 */
export type PromClient = typeof import("prom-client");

/** The metrics of one telemetry: where they live, the observer that feeds them, the page that serves them. */
export interface Metrics {
  readonly registry: Registry;
  readonly observer: CallObserver;
  readonly page: FetchPage;
}

/** The label every call of no tool served here is counted under: the requested string is client-controlled. */
const UNKNOWN_TOOL = "unknown";

/** The registry a caller gave, which prom-client's metrics register in: a clear error for anything but a `Registry`. */
function promRegistry(registry: MetricsRegistry): Registry {
  const candidate = registry as Partial<Registry>;
  if (typeof candidate.registerMetric !== "function" || typeof candidate.metrics !== "function") {
    throw new ServerConfigError("metrics.registry must be a prom-client Registry");
  }
  return registry as Registry;
}

/** Builds the metrics in the registry and the page that serves them. */
export function createMetrics(
  prom: PromClient,
  options: MetricsOptions,
  logger: Pick<Logger, "warn"> | undefined,
): Metrics {
  const path = options.path ?? "/metrics";
  if (!path.startsWith("/") || path.includes("?")) {
    throw new ServerConfigError(`metrics.path '${path}' must be a path starting with '/', without a query`);
  }
  if (ROUTES.some((route) => route.path === path)) {
    throw new ServerConfigError(`metrics.path '${path}' is a protocol route`);
  }
  if (options.token !== undefined && !/^\S+$/.test(options.token)) {
    throw new ServerConfigError("metrics.token must be non-empty, without spaces (leave it out for an open endpoint)");
  }
  const prefix = options.prefix ?? "oxp_";
  const registry = options.registry === undefined ? new prom.Registry() : promRegistry(options.registry);
  const registers = [registry];

  const calls = new prom.Counter({
    name: `${prefix}calls_total`,
    help: "Tool calls answered, by resolved tool id ('unknown' when none resolved) and outcome.",
    labelNames: ["tool_id", "outcome"] as const,
    registers,
  });
  const duration = new prom.Histogram({
    name: `${prefix}call_duration_seconds`,
    help: "How long tool calls took in the server, from reaching the core to their answer, in seconds.",
    labelNames: ["tool_id", "outcome"] as const,
    buckets: [...(options.buckets ?? DEFAULT_DURATION_BUCKETS)],
    registers,
  });
  const inFlight = new prom.Gauge({
    name: `${prefix}calls_in_flight`,
    help: "Tool calls in progress in the core.",
    registers,
  });
  const replays = new prom.Counter({
    name: `${prefix}idempotent_replays_total`,
    help: "Calls answered with the stored response of an earlier call with the same call_id.",
    labelNames: ["tool_id"] as const,
    registers,
  });
  const challenges = new prom.Counter({
    name: `${prefix}authorization_challenges_total`,
    help: "Authorization challenges started, by provider id.",
    labelNames: ["provider"] as const,
    registers,
  });
  if (options.defaultMetrics) {
    prom.collectDefaultMetrics({ register: registry });
  }

  // Every label value comes from the server's own configuration (catalog, outcomes, providers): the
  // series stay bounded whatever clients send.
  const observer: CallObserver = {
    callStarted: () => inFlight.inc(),
    callEnded: (event) => {
      inFlight.dec();
      const labels = { tool_id: event.toolId ?? UNKNOWN_TOOL, outcome: event.outcome };
      calls.inc(labels);
      duration.observe(labels, event.durationMs / 1000);
      if (event.outcome === "replayed") {
        replays.inc({ tool_id: labels.tool_id });
      }
    },
    // Provider ids have no dots; a challenge id is `<provider id>.<uuid>`: either way, only the provider is a label.
    challengeStarted: (providerId) => challenges.inc({ provider: providerId.split(".", 1)[0] ?? providerId }),
  };

  const expected = options.token;
  /** Why the request's credential is refused, or undefined when it is admitted. */
  const refusal = (request: Request): string | undefined => {
    if (expected === undefined) {
      return undefined;
    }
    const header = request.headers.get("authorization") ?? undefined;
    const token = parseBearer(header);
    if (token === undefined) {
      return header === undefined ? "no Authorization header" : "not a bearer token";
    }
    return constantTimeEqual(token, expected) ? undefined : "wrong metrics token";
  };

  const page: FetchPage = async (request) => {
    if (new URL(request.url).pathname !== path) {
      return undefined;
    }
    const reason = refusal(request);
    if (reason) {
      logger?.warn({ reason, method: request.method, path }, "metrics authentication failed");
      throw new WireError("unauthorized", "Authentication required", {
        developerMessage: "Send the metrics token as Authorization: Bearer <token>.",
        headers: { "WWW-Authenticate": 'Bearer realm="metrics"' },
      });
    }
    if (request.method !== "GET" && request.method !== "HEAD") {
      throw new WireError("method_not_allowed", "This method is not allowed here", { headers: { Allow: "GET, HEAD" } });
    }
    const text = await registry.metrics();
    return new Response(request.method === "HEAD" ? null : text, {
      status: 200,
      headers: { "Content-Type": registry.contentType, "Cache-Control": "no-store" },
    });
  };

  return { registry, observer, page };
}
