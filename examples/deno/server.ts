// Deno: `deno serve --allow-net --allow-env server.ts` serves the default export's fetch (--port, default 8000).
import { createFetchHandler } from "@otc/server/fetch";
import { add } from "../tools.ts";

export default { fetch: createFetchHandler({ tools: [add] }) };
