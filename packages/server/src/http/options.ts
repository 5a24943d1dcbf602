/** The options every adapter takes (node:http, Express, fetch) and the types they share; no runtime code. */

import type { ConnectionsOptions } from "../connections/options.js";
import type { Clock } from "../core/clock.js";
import type { ExtensionId } from "../core/extensions.js";
import type { CallEvent, CallObserver, CoreLogger, OxpCoreOptions } from "../core/oxp-core.js";
import type { AllowedHosts } from "./allowed-hosts.js";
import type { AuthenticationOptions } from "./authentication.js";
import type { FairnessOptions } from "./client-budget.js";

/**
 * A page served beside the protocol routes (consent pages, the Inspector, `/metrics`): it answers a request it
 * serves, or returns undefined to pass it on. Pages run without server authentication and on every adapter;
 * an error they throw is answered as a JSON 500. A page matches on `new URL(request.url).pathname`, which is
 * the path below the mount point when the server is mounted under a prefix.
 */
export type FetchPage = (request: Request) => Response | undefined | Promise<Response | undefined>;

/** The options every adapter takes. */
export interface AdapterOptions extends Omit<OxpCoreOptions, "logger"> {
  /** Server authentication; off when absent. */
  auth?: AuthenticationOptions;
  /**
   * The connections extension (docs/protocol.md 9.7): a vault of users' connections to third-party providers,
   * whose tokens the server puts into calls itself, so that clients never hold them.
   */
  connections?: ConnectionsOptions;
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
   * requests that arrive on a loopback address (on a fetch host that does not tell the local address: from
   * a loopback client); a list checks every request.
   */
  allowedHosts?: AllowedHosts;
  /** Cross-origin access for browser pages served elsewhere; off by default. */
  cors?: CorsOptions;
  /** Honour W3C `traceparent` headers as trace ids. Default true. */
  tracing?: boolean;
  /**
   * Where the server logs (pino's shape: `createLogger()` on Node, `consoleLogger()` anywhere), or `false` for
   * none. Default: `createLogger()` on the node:http and Express adapters, `consoleLogger()` on the fetch one.
   */
  logger?: CoreLogger | false;
  /** Metrics and traces (see `createTelemetry`); none by default. */
  telemetry?: Telemetry;
  /** Pages served beside the protocol routes, on every adapter (see {@link FetchPage}). */
  pages?: readonly FetchPage[];
  /**
   * The extensions beyond OXP 1.0 that a request may ask for with `OXP-Extensions` (docs/protocol.md 9): every
   * one the server implements by default, `false` for none (the server is then exactly OXP 1.0 and its discovery
   * document lists none), or a list of ids.
   */
  extensions?: false | readonly ExtensionId[];
  /** The cache extension (docs/protocol.md 9.9). */
  cache?: {
    /** How long a list or the discovery document may be kept: `max-age` and `ttl_ms`, in seconds. Default 60. */
    maxAgeSeconds?: number;
  };
  /** Bounds of the tasks extension's event streams (`GET /tools/calls/{call_id}/events`). */
  eventStreams?: {
    /** The most streams one client keeps open; past it, 429. Default 16. */
    maxPerClient?: number;
    /** How often a comment keeps an idle stream open, in milliseconds. Default 15,000. */
    keepAliveMs?: number;
  };
  /** Bounds of the tasks extension's long polls (`GET /tools/calls/{call_id}` with `Prefer: wait=N`). */
  longPolls?: {
    /**
     * The most long polls one client holds at once; past it, 429 with `Retry-After`. Default 100: one for each
     * asynchronous call a client may run at once (`maxAsyncCallsPerClient`).
     */
    maxPerClient?: number;
  };
}

/** Telemetry an adapter plugs in: metrics through a call observer and a page, a trace span around each call. */
export interface Telemetry {
  /** Told of every call; runs beside the `observer` option. */
  readonly observer?: CallObserver;
  /** Pages it serves (e.g. `GET /metrics`), each guarding itself: server authentication does not apply. */
  readonly pages?: readonly FetchPage[];
  /**
   * Runs one `POST /tools/call` inside a trace span: reads the request's trace headers (`headers`, names in lower
   * case), may add answer headers (`traceparent`) to `answerHeaders`, and learns how the call ended through `onEnd`.
   */
  traceCall?<T>(
    headers: Readonly<Record<string, string | undefined>>,
    answerHeaders: Record<string, string>,
    run: (onEnd: (event: CallEvent) => void) => Promise<T>,
  ): Promise<T>;
}

/** Cross-origin access for browser pages served elsewhere (e.g. the OXP Inspector run against this server). Off by default. */
export interface CorsOptions {
  /** Origins allowed to call the server from a browser (`https://app.example.com`), or `"*"` for any. */
  origins: readonly string[] | "*";
  /** How long a browser may cache a preflight answer, in seconds. Default 600. */
  maxAgeSeconds?: number;
}

/** A running app's state as `listen` and a host read it: readiness (which a host may set), draining, requests in progress. */
export interface OxpLifecycle {
  /** False while warming up: `/health` answers 503. `listen` sets it; a host app may too (until its own parts are up). */
  ready: boolean;
  /** True once shutdown began ({@link OxpRuntime.drain}): every request is answered 503. */
  readonly draining: boolean;
  /** Requests in progress. */
  readonly inFlight: number;
}

/**
 * What `listen` (or a host's own start-up and shutdown) drives of an OXP app (`app.oxp`, `handler.oxp`): its
 * lifecycle, the drain, and the end of the calls still running. Nothing more of the server is reachable from it.
 */
export interface OxpRuntime {
  readonly lifecycle: OxpLifecycle;
  /** Begins shutdown, for good: every request from now on is answered 503 with `Connection: close`. */
  drain(): void;
  /**
   * Stops every tool run in progress through its AbortSignal, each call answered with a retryable failure saying
   * the server is shutting down; resolves once those answers exist. For the end of a drain.
   */
  abortAll(): Promise<void>;
  /** The clock the server's time rules follow (its `clock` option): `listen`'s own accounting follows it too. */
  readonly clock: Clock;
  /** True when the app's first request compiles something (Express's contract validator): `listen` sends it before reporting ready. */
  readonly warmUp?: boolean;
}
