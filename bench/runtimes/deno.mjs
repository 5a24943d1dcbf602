/** The fetch handler on Deno: `deno run ... bench/runtimes/deno.mjs` serves the demo catalog on 127.0.0.1, a port of its own. */
import { benchFetchHandler } from "./catalog.mjs";

const handler = benchFetchHandler();
Deno.serve(
  { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.error(`listening on http://127.0.0.1:${port}`) },
  // The client's address, as the handler's README shows: with authentication off, fair share counts by it.
  (request, info) => handler(request, { remoteAddress: info.remoteAddr.hostname }),
);
