/**
 * @otc/server/validation/default on Node, Bun and Deno: Ajv, whose compiled code is the fastest. The workerd, worker,
 * edge-light and browser export conditions select default-worker.ts instead (package.json `exports`).
 */
export { ajvValidators as defaultValidators } from "./ajv.js";
