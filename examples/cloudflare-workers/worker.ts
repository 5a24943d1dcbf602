// Cloudflare Workers: `wrangler deploy` (wrangler.toml beside this file). The handler is made at the top level,
// where Workers still allow compiling the tools' schemas; state in memory is per isolate (see the README).
import { createFetchHandler } from "@otc/server/fetch";
import { add } from "../tools.ts";

export default { fetch: createFetchHandler({ tools: [add] }) };
