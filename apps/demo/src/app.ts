/** Builds the demo Tool Server on the Express adapter: the catalog, the demo Google provider and its consent pages (or with Example Accounts, its vault and sign-in). */
import { inspectorPage, readInspectorFiles } from "@otc/inspector";
import { createServer, type OxpApp } from "@otc/server";
import { type DemoOptions, type DemoParts, demoParts } from "./demo.js";

export { createExampleAccounts, type ExampleAccounts, type ExampleAccountsOptions } from "./accounts.js";
export type { DemoOptions, DemoParts } from "./demo.js";

/** The demo app and the parts tests reach into: `google` without Example Accounts, `session` with it. */
export interface DemoApp extends DemoParts {
  app: OxpApp;
}

/**
 * The demo server: the OXP routes plus the consent pages at /demo/authorize and the Inspector at
 * /inspector and /docs, which need no server authentication (a browser opens them) and share the
 * server's headers and JSON errors. With `accounts`, Example Accounts at /accounts and the sign-in at /demo/signin,
 * and no consent pages: Gmail's `google` is a connection of the vault then.
 */
export function createDemoApp(options: DemoOptions = {}): DemoApp {
  const { google, counter, session, serverOptions, pages, nodePages } = demoParts(options);
  const files = options.inspectorFiles ?? readInspectorFiles;
  const app = createServer({ ...serverOptions, nodePages, pages: [...pages, inspectorPage({ files })] });
  return { app, counter, ...(google ? { google } : {}), ...(session ? { session } : {}) };
}
