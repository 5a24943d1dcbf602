/** The public options of an OXP server's Prometheus metrics, apart from prom-client: its types stay out of @otc/server's declarations, which compile without the optional peer. */

/**
 * What the server uses of a prom-client `Registry` (`metrics()` and `contentType`, for the page), declared here
 * so that @otc/server's types do not need prom-client installed. Every prom-client `Registry` is one; pass one
 * as `metrics.registry` and `telemetry.registry` has its type.
 */
export interface MetricsRegistry {
  /** The metrics in the exposition format. */
  metrics(): Promise<string>;
  /** The exposition format's content type. */
  readonly contentType: string;
}

/** Options of the metrics (`createTelemetry({ metrics })`). */
export interface MetricsOptions<R extends MetricsRegistry = MetricsRegistry> {
  /** Where the metrics are served (`GET`/`HEAD`). Default `/metrics`. */
  path?: string;
  /**
   * A bearer token the scraper must send (`Authorization: Bearer <token>`). Without one the page is
   * open to anyone who reaches the server: bind it to a private network, or set a token.
   */
  token?: string;
  /** The prom-client `Registry` the metrics are registered in. Default: a new one (prom-client's global `register` works too). */
  registry?: R;
  /** Prefix of every metric name. Default `oxp_`. */
  prefix?: string;
  /** Upper bounds of the call duration histogram's buckets, in seconds. Default {@link DEFAULT_DURATION_BUCKETS}. */
  buckets?: readonly number[];
  /** Also collect prom-client's default process metrics (CPU, memory, event loop lag, GC) into the registry. Default false. */
  defaultMetrics?: boolean;
}

/**
 * The call duration histogram's buckets, in seconds: from a few milliseconds (a local computation) to a
 * minute (twice the default time limit of 30 s), so slow tools and time-outs fall in a bucket of their own.
 */
export const DEFAULT_DURATION_BUCKETS: readonly number[] = [
  0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60,
];
