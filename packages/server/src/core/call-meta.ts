/** What an adapter tells the core of a call besides its body: who sent it, where the server is, how to follow it. */
import type { CallEvent } from "./call-log.js";

/** What the adapter knows about a call besides its body. */
export interface CallMeta {
  /** Who the server authenticated (`anonymous` when authentication is off). Part of the idempotency key. */
  principal: string;
  /**
   * Throws when the caller may not call a tool requiring `toolScopes` (docs/protocol.md 9.6, `[oauth.scopes]`):
   * the check of an OAuth access token's scopes, once the tool is known (a 403). Absent for a caller that scopes
   * do not limit (an API key, section 5's JWTs, no authentication).
   */
  requireScopes?(toolScopes: readonly string[]): void;
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
   * Whether an invalid input is explained parameter by parameter (the default), or by its first error only: an
   * adapter that counted a huge body's values says false, as explaining every error of a hostile input costs
   * more than it tells.
   */
  allErrors?: boolean;
  /**
   * Runs `work` and returns what it returns: each piece of the call's synchronous work the core does after a wait
   * (a run once its call_id is claimed, storing its answer, checking an asynchronous tool's value) goes through
   * here, for an adapter to account for work it cannot see itself (the HTTP adapters' fair share). Default: runs it.
   */
  afterWait?<T>(work: () => T): T;
  /**
   * Aborts when the client goes away before its answer is sent. A run without a call_id is then aborted through its
   * AbortSignal: nobody could collect its answer. A run with a call_id goes on, and its answer is kept for a retry.
   * Read only for a run that does not answer at once.
   */
  readonly signal?: AbortSignal;
}
