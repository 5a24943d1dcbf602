// Bun: `bun run server.ts` serves the default export's fetch (PORT, default 3000).
import { createFetchHandler } from "@otc/server/fetch";
import { add } from "../tools.ts";

export default { fetch: createFetchHandler({ tools: [add] }) };
