/** What an adapter tells the core of a call besides its body: who sent it, where the server is, how to follow it. */
import type { CallEvent } from "./call-log.js";

/** What the adapter knows about a call besides its body. */
export interface CallMeta {
  /** Who the server authenticated (`anonymous` when authentication is off). Part of the idempotency key. */
  principal: string;
  /** A trace id from a W3C `traceparent` header; the request's `trace_id` wins. */
  traceId?: string;
  /** The server's public base URL (no trailing slash), for challenge URLs. */
  baseUrl: string;
  /** Told how this call ended, after the core's observer (e.g. to annotate the call's trace span). */
  onEnd?: (event: CallEvent) => void;
  /**
   * Who the limits on running calls count this call against. Default: the principal. The HTTP adapters give an
   * anonymous caller's address, so that with authentication off one client cannot take every other's share.
   */
  client?: string;
  /**
   * How many values the body held (`scanJson`'s count). Above {@link ALL_ERRORS_MAX_VALUES} an invalid input is
   * explained by its first error only: explaining every error of a hostile input costs more than it tells.
   */
  bodyValues?: number;
  /**
   * Told of the milliseconds the core spends on this call where the adapter cannot measure them, for the
   * adapter's per-client budget: work done after a wait (a run once its call_id is claimed, checking an
   * asynchronous tool's value, storing the answer). The adapter measures what `call` does before its first wait.
   */
  charge?(ms: number): void;
  /**
   * Calls `onGone` when the client goes away before its answer is sent; returns a function that stops watching.
   * A run without a call_id is then aborted through its AbortSignal: nobody could collect its answer. A run with
   * a call_id goes on, and its answer is kept for a retry.
   */
  watchClient?(onGone: () => void): () => void;
}

/** Above this many values in a body, an invalid input is explained by its first error only (see {@link CallMeta.bodyValues}). */
export const ALL_ERRORS_MAX_VALUES = 1_000;
