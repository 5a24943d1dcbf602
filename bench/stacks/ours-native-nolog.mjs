/** A diagnostic, not a deployment: the native adapter with `logger: false`, to show what the per-call log line costs. */
import * as server from "@otc/server";
import { coreStandIn } from "./core-standin.mjs";
import { ourOptions } from "./ours-express.mjs";

export async function start(config) {
  const options = { ...ourOptions(config), logger: false };
  if (typeof server.createHandler === "function") {
    const { url } = await server.listen(server.createHandler(options), { port: 0 });
    return { url, note: "createHandler({ logger: false }) + listen" };
  }
  const { logger: _none, ...quiet } = options;
  return { url: await coreStandIn(quiet), note: "stand-in, no logger" };
}
