/** The fetch handler as a Worker (bundled by bench/lib/runtimes.mjs for workerd): built on the first request, as a Worker's state is. */
import { benchFetchHandler } from "./catalog.mjs";

let handler;
export default {
  fetch(request) {
    // Not at start-up: a Worker's global scope may not generate random values or set timers.
    handler ??= benchFetchHandler();
    return handler(request);
  },
};
