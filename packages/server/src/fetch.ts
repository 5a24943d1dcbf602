/**
 * @otc/server/fetch: serve tools over OXP 1.0 as one web-standard handler, `(request) => Promise<Response>`, on
 * Bun, Deno, Cloudflare Workers or any fetch-based host. It loads no Node module and no Express.
 */
export * from "./exports.js";
export {
  type BunServer,
  type ClientInfo,
  createFetchHandler,
  type DenoServeHandlerInfo,
  type FetchHandler,
  type FetchHandlerInfo,
  type FetchHandlerOptions,
} from "./http/fetch-handler.js";
