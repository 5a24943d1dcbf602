/**
 * @otc/server/adapter: the one request pipeline, for serving OXP on a host that none of the three adapters covers
 * (another HTTP server, a platform's own request type). An adapter turns its host's request into an
 * {@link Exchange}, calls {@link Pipeline.handle}, and writes the {@link Answer} back, as the node:http, Express and
 * fetch adapters do (src/http/node-exchange.ts, create-server.ts, fetch-handler.ts). Every export here is public API.
 *
 * @example
 * const pipeline = createPipeline({ tools, logger: consoleLogger() });
 * const answer = await pipeline.handle(exchangeOf(request)); // your host's request as an Exchange
 * if (answer) write(answer.status, answer.headers, answer.response ?? answer.body);
 */
export type { Answer, Exchange } from "./http/exchange.js";
export type { AdapterOptions, OxpLifecycle, OxpRuntime } from "./http/options.js";
export { type ContractCheck, createPipeline, type Pipeline, type PipelineHost } from "./http/pipeline.js";
export { bodyTooLarge } from "./http/request-body.js";
