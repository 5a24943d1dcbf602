// Bun: `bun run server.ts` serves the default export's fetch (PORT, default 3000).
import { createFetchHandler } from "@otc/server/fetch";
import { add } from "../tools.ts";

// Bun passes its Server as fetch's second argument: the handler asks it for the client's address (requestIP). With
// Bun.serve, the same: Bun.serve({ fetch: createFetchHandler({ tools: [add] }) }).
export default { fetch: createFetchHandler({ tools: [add] }) };
