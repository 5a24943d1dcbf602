// Deno: `deno serve --allow-net --allow-env server.ts` serves the default export's fetch (--port, default 8000).
import { createFetchHandler } from "@otc/server/fetch";
import { add } from "../tools.ts";

// Deno passes its ServeHandlerInfo as fetch's second argument: the handler reads the client's address there
// (remoteAddr). With Deno.serve, the same: Deno.serve(createFetchHandler({ tools: [add] })).
export default { fetch: createFetchHandler({ tools: [add] }) };
