/** Builds the demo Tool Server on the node:http adapter (`OXP_ADAPTER=node`): the same server as app.ts, without Express. */
import { inspectorPage, readInspectorFiles } from "@otc/inspector";
import { createHandler, type OxpHandler } from "@otc/server/node";
import { type DemoOptions, type DemoParts, demoParts } from "./demo.js";

/** The demo handler and the parts tests reach into: `google` without Example Accounts, `session` with it. */
export interface DemoHandler extends DemoParts {
  app: OxpHandler;
}

/** The demo server on plain node:http: its consent pages (or sign-in) and the Inspector are fetch pages, as on every adapter. */
export function createDemoHandler(options: DemoOptions = {}): DemoHandler {
  const { google, counter, session, serverOptions, pages, nodePages } = demoParts(options);
  const files = options.inspectorFiles ?? readInspectorFiles;
  const app = createHandler({ ...serverOptions, nodePages, pages: [...pages, inspectorPage({ files })] });
  return { app, counter, ...(google ? { google } : {}), ...(session ? { session } : {}) };
}
