/** @otc/inspector: the OXP Inspector page and the API reference, served by one node `(req, res, next)` handler. */
export { type InspectorHandler, type InspectorOptions, inspector } from "./handler.js";
