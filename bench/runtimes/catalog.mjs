/** The demo catalog for the fetch handler on any runtime: only `@otc/server/fetch` and the demo's tools, no Node module. */
import { demoTools } from "@otc/demo/tools";
import { createFetchHandler } from "@otc/server/fetch";

/**
 * The fetch handler every runtime row serves: the demo catalog (as `catalogTools("demo")` in bench/stacks), the
 * options the other rows use, and the fetch handler's default logger (`consoleLogger`: one JSON line per call).
 */
export function benchFetchHandler(options = {}) {
  return createFetchHandler({ tools: demoTools(), ...options });
}
