/** Cold start of the fetch handler on Node: `serve` from @hono/node-server, as a fetch-only deployment on Node would run it. */
import { serve } from "@hono/node-server";
import { benchFetchHandler } from "./catalog.mjs";

const handler = benchFetchHandler();
serve(
  {
    hostname: "127.0.0.1",
    port: 0,
    // The client's and the server's addresses, from the socket.
    fetch: (request, env) =>
      handler(request, {
        remoteAddress: env.incoming.socket.remoteAddress,
        localAddress: env.incoming.socket.localAddress,
      }),
  },
  ({ port }) => console.error(`listening on http://127.0.0.1:${port}`),
);
