/**
 * @otc/inspector: the OXP Inspector page and the API reference, served by a fetch page (`inspectorPage`, every
 * runtime) or a node `(req, res, next)` handler (`inspector`), both from the package's built files.
 */
export { type InspectorHandler, type InspectorOptions, inspector, readInspectorFiles } from "./handler.js";
export type { InspectorFiles, InspectorFilesLoader } from "./internal/inspector-core.js";
export { type InspectorPageOptions, inspectorPage } from "./page.js";
