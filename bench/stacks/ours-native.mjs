/** Our native adapter: `createHandler` + `listen` from @otc/server once it exists, else the core on node:http (bench/stacks/core-standin.mjs). */
import * as server from "@otc/server";
import { createLogger } from "@otc/server";
import { coreStandIn } from "./core-standin.mjs";
import { ourOptions } from "./ours-express.mjs";

/** True when the built @otc/server exports the native adapter. */
export const hasCreateHandler = typeof server.createHandler === "function";

export async function start(config) {
  const options = ourOptions(config);
  if (hasCreateHandler) {
    const { url } = await server.listen(server.createHandler(options), { port: 0 });
    return { url, note: "createHandler + listen" };
  }
  // As createHandler would: the default logger writes one JSON line per call to standard output.
  const url = await coreStandIn({ ...options, logger: createLogger() });
  return { url, note: "stand-in: OxpCore on node:http (bench/stacks/core-standin.mjs)" };
}
