/** Our native adapter: `createHandler` + `listen` from @otc/server, default JSON logs on standard output. */
import { createHandler, listen } from "@otc/server";
import { ourOptions } from "./ours-express.mjs";

export async function start(config) {
  // Default logger: one JSON line per call on standard output, which the bench points at /dev/null.
  const { url } = await listen(createHandler(ourOptions(config)), { port: 0 });
  return { url, note: "createHandler + listen" };
}
