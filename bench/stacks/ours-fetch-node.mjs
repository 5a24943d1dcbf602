/**
 * Our fetch handler on Node: `createFetchHandler` through @hono/node-server's bridge (`getRequestListener`, its
 * defaults), run by `listen` as the native adapter is, logging the same line through the same logger (`createLogger`).
 */
import { getRequestListener } from "@hono/node-server";
import { createLogger, listen } from "@otc/server";
import { createFetchHandler } from "@otc/server/fetch";
import { ourOptions } from "./ours-express.mjs";

export async function start(config) {
  // The pino logger of the other Node rows, not the fetch handler's default (consoleLogger): the row then differs
  // from the native adapter's by the adapter alone.
  const handler = createFetchHandler({ ...ourOptions(config), logger: createLogger() });
  const listener = getRequestListener((request, env) =>
    handler(request, {
      remoteAddress: env.incoming.socket.remoteAddress,
      localAddress: env.incoming.socket.localAddress,
    }),
  );
  const { url } = await listen(Object.assign(listener, { oxp: handler.oxp }), { port: 0 });
  return { url, note: "createFetchHandler + @hono/node-server getRequestListener + listen" };
}
