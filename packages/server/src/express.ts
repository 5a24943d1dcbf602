/**
 * @otc/server/express: the Express 5 adapter (`createServer`), whose request contract check is
 * express-openapi-validator. Needs `express` and `express-openapi-validator` installed beside @otc/server.
 */
export type { OxpApp, ServerOptions } from "./http/create-server.js";
export { createServer } from "./http/create-server.js";
