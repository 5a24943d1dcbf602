/**
 * @otc/inspector/fetch: the OXP Inspector and the API reference as a fetch page, for every runtime (Node, Bun, Deno,
 * Cloudflare workerd). It loads no Node module; the node handler and the `node:fs` reader are `@otc/inspector`'s.
 */
export type { InspectorFiles, InspectorFilesLoader } from "./internal/inspector-core.js";
export { type InspectorPageOptions, inspectorPage } from "./page.js";
