/**
 * @otc/server/node: serve tools over OXP 1.0 on plain node:http, without loading Express (a faster
 * start, the lowest cost per call). The same exports as `@otc/server` but for the Express adapter.
 */
export * from "./exports.js";
export type { ListenOptions, RunningServer } from "./http/listen.js";
export { listen } from "./http/listen.js";
export { createLogger, type LoggerOptions } from "./http/logger.js";
export type { PageHandler } from "./http/node-exchange.js";
export type { HandlerOptions, OxpHandler } from "./http/node-handler.js";
export { createHandler } from "./http/node-handler.js";
export {
  createTelemetry,
  DEFAULT_DURATION_BUCKETS,
  type MetricsOptions,
  type MetricsRegistry,
  type OxpTelemetry,
  type TelemetryOptions,
  TRACER_NAME,
  type TracingOptions,
} from "./telemetry/index.js";
