/** Builds the demo Tool Server as a fetch handler (Bun, Deno, Cloudflare Workers, any fetch host): the same server as app.ts and handler.ts. */
import { inspectorPage } from "@otc/inspector/fetch";
import { createFetchHandler, type FetchHandler } from "@otc/server/fetch";
import { type DemoOptions, type DemoParts, defaultParts } from "./demo.js";
import type { DemoGoogleProvider } from "./google-provider.js";

export type { DemoOptions } from "./demo.js";

/** The demo fetch handler and the parts tests reach into: always the demo Google provider (no Example Accounts here). */
export interface DemoFetchHandler extends DemoParts {
  google: DemoGoogleProvider;
  handler: FetchHandler;
}

/**
 * The demo server as one fetch handler: the OXP routes, the consent pages at /demo/authorize, and the Inspector at
 * /inspector and /docs when `inspectorFiles` gives its files (`readInspectorFiles` where there is a file system;
 * workerd has none). Its state (challenges, tokens, the counter) lives in memory: per process, and on Workers
 * per isolate; pass `challengeStore` and `tokenStore` to share it.
 *
 * @example
 * const { handler } = createDemoFetchHandler();
 * Bun.serve({ fetch: handler });
 */
export function createDemoFetchHandler(options: DemoOptions = {}): DemoFetchHandler {
  if (options.accounts) {
    // oidc-provider is a Koa app on node:http: the fetch handler has nowhere to mount it.
    throw new Error("Example Accounts runs on Node: serve the demo with app.ts or handler.ts to use it");
  }
  const { accounts: _accounts, vaultKeys: _keys, ...rest } = options;
  const { google, counter, serverOptions, pages } = defaultParts(rest);
  const files = options.inspectorFiles;
  const handler = createFetchHandler({ ...serverOptions, pages: files ? [...pages, inspectorPage({ files })] : pages });
  return { handler, google, counter };
}
