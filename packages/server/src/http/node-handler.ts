/** The node:http adapter: a request listener that hands each request to the pipeline and writes its answer. */
import type { RequestListener } from "node:http";
import { callLineSink, createLogger } from "./logger.js";
import { NodeExchange, type PageHandler, writeAnswer } from "./node-exchange.js";
import type { AdapterOptions, OxpRuntime } from "./options.js";
import { createPipeline } from "./pipeline.js";

/** Options of {@link createHandler}: those of every adapter, plus pages in the node style. */
export interface HandlerOptions extends AdapterOptions {
  /**
   * Node-style handlers served beside the protocol routes without server authentication, before the fetch
   * `pages`. Each gets the request first for any path that is not a protocol route and calls `next()` when it
   * does not serve it. An Express app or router fits (`(req, res, next) => app(req, res, next)`). Their errors are
   * answered in JSON with `OXP-Version`.
   */
  nodePages?: readonly PageHandler[];
}

/** A node:http request listener serving OXP, with its runtime for `listen`. */
export type OxpHandler = RequestListener & { readonly oxp: OxpRuntime };

/**
 * Creates a node:http request listener that serves the given tools over OXP: the same contract as every
 * adapter (docs/protocol.md, every rule) without Express, for the lowest cost per call. Run it with `listen`,
 * or hand it to any `http.createServer`.
 *
 * @example
 * const handler = createHandler({ tools: [add] });
 * await listen(handler, { port: 8080 });
 */
export function createHandler(options: HandlerOptions): OxpHandler {
  const { nodePages, ...adapterOptions } = options;
  const pipeline = createPipeline(adapterOptions, { defaultLogger: createLogger, callLineOf: callLineSink });
  const handler: RequestListener = (req, res) => {
    const exchange = new NodeExchange(req, res, "", nodePages);
    pipeline.handle(exchange).then(
      (answer) => {
        if (answer) {
          writeAnswer(res, answer);
        }
      },
      // The pipeline answers every error itself; this is for a fault in writing the answer.
      (error: unknown) => writeAnswer(res, pipeline.fail(exchange, error)),
    );
  };
  return Object.assign(handler, { oxp: pipeline.runtime });
}
