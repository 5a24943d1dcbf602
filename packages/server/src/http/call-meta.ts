/** A call's {@link CallMeta} as the HTTP layer makes it from a request: who calls, its trace id, its base URL, its fair-share budget and its client's watch. */
import type { CallMeta } from "../core/oxp-core.js";
import { parseTraceparent } from "../core/traceparent.js";
import type { ClientBudget } from "./client-budget.js";
import type { Exchange } from "./exchange.js";

/**
 * A call's meta from an exchange: its principal and client, `traceparent`'s trace id (when tracing is on), a base
 * URL looked up only when a challenge reads it, the fairness budget its work is charged to, and a watch on its client.
 */
export class ExchangeCallMeta implements CallMeta {
  readonly principal: string;
  readonly client: string;
  readonly traceId: string | undefined;
  readonly bodyValues: number;
  onEnd?: CallMeta["onEnd"];
  /** The request, until its call is answered (see {@link answered}). */
  private exchange: Exchange | undefined;
  private readonly publicUrl: string | undefined;
  private readonly budget: ClientBudget | undefined;
  constructor(init: {
    exchange: Exchange;
    principal: string;
    client: string;
    tracing: boolean;
    publicUrl: string | undefined;
    budget: ClientBudget | undefined;
    bodyValues: number;
  }) {
    this.exchange = init.exchange;
    this.principal = init.principal;
    this.client = init.client;
    this.bodyValues = init.bodyValues;
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
  charge(ms: number): void {
    this.budget?.charge(this.client, ms);
  }
  watchClient(onGone: () => void): () => void {
    // Once the call is answered, its client has nothing left to wait for.
    return this.exchange ? this.exchange.watchClient(onGone) : () => {};
  }
  /**
   * Lets go of the request once the core has answered. The core may keep a call's meta past its answer (a tool's
   * context, an unsettled run), and the request holds its whole connection's objects: kept from a short-lived
   * object, they would all outlive the young generation, and every collection would copy them.
   */
  answered(): void {
    this.exchange = undefined;
  }
}
