/** The fetch handler on Bun: `bun bench/runtimes/bun.mjs` serves the demo catalog on 127.0.0.1, a port of its own. */
import { benchFetchHandler } from "./catalog.mjs";

const handler = benchFetchHandler();
const server = Bun.serve({
  hostname: "127.0.0.1",
  port: 0,
  // As deployed: no development error pages.
  development: false,
  // The client's address, as the handler's README shows: with authentication off, fair share counts by it.
  fetch: (request, bun) => handler(request, { remoteAddress: bun.requestIP(request)?.address }),
});
console.error(`listening on http://127.0.0.1:${server.port}`);
