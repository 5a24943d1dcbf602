/** Telemetry for an OXP server: Prometheus metrics and OpenTelemetry traces, their libraries loaded only when asked for. */
import type { Logger } from "pino";
import { createLogger } from "../http/logger.js";
import { optionalPeer } from "../http/optional-peer.js";
import type { FetchPage, Telemetry } from "../http/options.js";
import { createMetrics } from "./metrics.js";
import type { MetricsOptions, MetricsRegistry } from "./metrics-options.js";
import { createCallTracer, type TracingOptions } from "./tracing.js";

export { DEFAULT_DURATION_BUCKETS, type MetricsOptions, type MetricsRegistry } from "./metrics-options.js";
export { TRACER_NAME, type TracingOptions } from "./tracing.js";

/** Options of {@link createTelemetry}; `R` is the type of the registry given in `metrics.registry`. */
export interface TelemetryOptions<R extends MetricsRegistry = MetricsRegistry> {
  /** Prometheus metrics served at `GET /metrics` (`true` for the defaults). Off when absent. */
  metrics?: MetricsOptions<R> | boolean;
  /** A SERVER span per tool call through @opentelemetry/api (`true` for the global tracer). Off when absent. */
  tracing?: TracingOptions | boolean;
  /**
   * Where refused metrics credentials are logged (reason and remote address, never the credential): pass
   * the server's logger. Default: JSON lines on standard output at `LOG_LEVEL`; `false` for none.
   */
  logger?: Pick<Logger, "warn"> | false;
}

/** What {@link createTelemetry} returns: the `telemetry` option of `createServer`/`createHandler`. */
export interface OxpTelemetry<R extends MetricsRegistry = MetricsRegistry> extends Telemetry {
  /**
   * The prom-client `Registry` the metrics live in, e.g. to add your own; undefined without metrics. Typed as the
   * one given in `metrics.registry` (a prom-client `Registry`), else as what the server uses of it.
   */
  readonly registry: R | undefined;
}

/**
 * Creates the telemetry of a server, for its `telemetry` option. Asynchronous because it loads
 * prom-client and @opentelemetry/api only when metrics or tracing are on: a server without telemetry
 * never pays for them at start-up. One telemetry may serve several servers of one process; their
 * metrics then add up.
 *
 * @example
 * const telemetry = await createTelemetry({ metrics: { token: process.env.METRICS_TOKEN }, tracing: true });
 * const app = createServer({ tools, telemetry });
 */
export async function createTelemetry<R extends MetricsRegistry = MetricsRegistry>(
  options: TelemetryOptions<R> = {},
): Promise<OxpTelemetry<R>> {
  const metricsOptions = options.metrics === true ? {} : options.metrics || undefined;
  const tracingOptions = options.tracing === true ? {} : options.tracing || undefined;
  const [prom, api] = await Promise.all([
    metricsOptions ? optionalPeer(() => import("prom-client"), "prom-client", "Metrics") : undefined,
    tracingOptions ? import("@opentelemetry/api") : undefined,
  ]);
  const logger =
    options.logger === false ? undefined : (options.logger ?? (metricsOptions?.token ? createLogger() : undefined));
  const metrics = prom && metricsOptions ? createMetrics(prom, metricsOptions, logger) : undefined;
  const traceCall = api && tracingOptions ? createCallTracer(api, tracingOptions) : undefined;
  const pages: readonly FetchPage[] = metrics ? [metrics.page] : [];
  return {
    // The registry given (an R), or the one made when none was: R is then its default, MetricsRegistry.
    registry: metrics?.registry as R | undefined,
    ...(metrics ? { observer: metrics.observer } : {}),
    pages,
    ...(traceCall ? { traceCall } : {}),
  };
}
