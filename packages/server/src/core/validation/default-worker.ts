/**
 * @otc/server/validation/default under the workerd, worker, edge-light and browser export conditions: cfworker, for
 * runtimes that refuse code generated at run time (Cloudflare workerd while it handles requests, Vercel's edge).
 */
export { cfworkerValidators as defaultValidators } from "./cfworker.js";
