/** A diagnostic, not a deployment: the native adapter with `logger: false`, to show what the per-call log line costs. */
import { createHandler, listen } from "@otc/server";
import { ourOptions } from "./ours-express.mjs";

export async function start(config) {
  const { url } = await listen(createHandler({ ...ourOptions(config), logger: false }), { port: 0 });
  return { url, note: "createHandler({ logger: false }) + listen" };
}
