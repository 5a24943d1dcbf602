/**
 * @otc/server: serve tools over the Open eXecution Protocol (OXP 1.0) with Express 5 (`createServer`)
 * or plain node:http (`createHandler`). Every export here is public API; nothing else in src is. Without
 * Express: `@otc/server/node` (node:http), `@otc/server/fetch` (a fetch handler for Bun, Deno, Workers),
 * `@otc/server/core` (the core without HTTP, for other adapters).
 */
export * from "./express.js";
export * from "./node.js";
