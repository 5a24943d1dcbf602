/**
 * @otc/server: serve tools over the Open eXecution Protocol (OXP 1.0) with Express 5 (`createServer`)
 * or plain node:http (`createHandler`). Every export here is public API; nothing else in src is. The
 * node:http adapter without Express is the `@otc/server/node` subpath; the core without HTTP, for
 * other adapters, is `@otc/server/core`.
 */
export type { OxpApp, ServerOptions } from "./http/create-server.js";
export { createServer } from "./http/create-server.js";
export * from "./node.js";
