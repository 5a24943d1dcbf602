/** A call's {@link CallMeta} as the HTTP layer makes it from a request: who calls, its trace id, its base URL, its fair share of the work after a wait, and its client's hang-up. */
import type { CallMeta } from "../core/oxp-core.js";
import { parseTraceparent } from "../core/traceparent.js";
import type { ClientBudget } from "./client-budget.js";
import type { Exchange } from "./exchange.js";
import { CALL_SCOPE, type OAuthGrant, type OAuthResource } from "./oauth.js";

/** Above this many values in a body, an invalid input is explained by its first error only (see {@link CallMeta.allErrors}). */
export const ALL_ERRORS_MAX_VALUES = 1_000;

/**
 * A call's meta from an exchange: its principal and client, `traceparent`'s trace id (when tracing is on), a base
 * URL looked up only when a challenge reads it, the fairness budget its work is charged to, and a watch on its client.
 */
export class ExchangeCallMeta implements CallMeta {
  readonly principal: string;
  readonly client: string;
  readonly traceId: string | undefined;
  readonly allErrors: boolean;
  onEnd?: CallMeta["onEnd"];
  /** What the call's OAuth access token grants, when one admitted it. */
  private readonly grant: OAuthGrant | undefined;
  private readonly oauth: OAuthResource | undefined;
  /** The request, until its call is answered (see {@link answered}). */
  private exchange: Exchange | undefined;
  private readonly publicUrl: string | undefined;
  private readonly budget: ClientBudget | undefined;
  #hangUp: AbortController | undefined;
  #unwatch: (() => void) | undefined;
  constructor(init: {
    exchange: Exchange;
    principal: string;
    grant?: OAuthGrant | undefined;
    oauth?: OAuthResource | undefined;
    client: string;
    tracing: boolean;
    publicUrl: string | undefined;
    budget: ClientBudget | undefined;
    bodyValues: number;
  }) {
    this.exchange = init.exchange;
    this.principal = init.principal;
    this.grant = init.grant;
    this.oauth = init.oauth;
    this.client = init.client;
    this.allErrors = init.bodyValues <= ALL_ERRORS_MAX_VALUES;
    this.publicUrl = init.publicUrl;
    this.budget = init.budget;
    this.traceId = init.tracing ? parseTraceparent(init.exchange.header("traceparent"))?.traceId : undefined;
  }
  get baseUrl(): string {
    if (this.publicUrl !== undefined) {
      return this.publicUrl;
    }
    if (this.exchange === undefined) {
      throw new Error("The call was answered: its request is gone");
    }
    return this.exchange.baseUrl();
  }
  /** An access token's scopes against the call's and its tool's (docs/protocol.md 9.6, `[oauth.scopes]`): a 403 naming all. */
  requireScopes(toolScopes: readonly string[]): void {
    const grant = this.grant;
    if (!grant) {
      return;
    }
    if (grant.scopes.has(CALL_SCOPE) && toolScopes.every((scope) => grant.scopes.has(scope))) {
      return;
    }
    throw (this.oauth as OAuthResource).insufficientScope([CALL_SCOPE, ...toolScopes]);
  }
  /** The work after a wait is the client's too: measured here, charged to its fair share. */
  afterWait<T>(work: () => T): T {
    const budget = this.budget;
    if (!budget) {
      return work();
    }
    const started = performance.now();
    try {
      return work();
    } finally {
      budget.charge(this.client, performance.now() - started);
    }
  }
  /** Made when the core first asks (a run that did not answer at once): a watch on the client until the answer. */
  get signal(): AbortSignal | undefined {
    if (!this.#hangUp) {
      // Once the call is answered, its client has nothing left to wait for.
      if (!this.exchange) {
        return undefined;
      }
      const hangUp = new AbortController();
      this.#unwatch = this.exchange.watchClient(() => hangUp.abort());
      this.#hangUp = hangUp;
    }
    return this.#hangUp.signal;
  }
  /**
   * Lets go of the request once the core has answered. The core may keep a call's meta past its answer (a tool's
   * context, an unsettled run), and the request holds its whole connection's objects: kept from a short-lived
   * object, they would all outlive the young generation, and every collection would copy them.
   */
  answered(): void {
    this.exchange = undefined;
    this.#unwatch?.();
    this.#unwatch = undefined;
  }
}
