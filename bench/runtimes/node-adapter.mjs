/** Cold start of the node adapter: `createHandler` + `listen` from `@otc/server/node` (no Express loaded), the demo catalog. */
import { demoTools } from "@otc/demo/tools";
import { createHandler, listen } from "@otc/server/node";

const { url } = await listen(createHandler({ tools: demoTools() }), { port: 0 });
console.error(`listening on ${url}`);
