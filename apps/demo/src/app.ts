/** Builds the demo Tool Server: the catalog, the demo Google provider and its consent pages. */
import { createServer, type OxpApp, type ServerOptions } from "@otc/server";
import { DemoGoogleProvider } from "./google-provider.js";
import { demoTools } from "./tools.js";

/** Options of {@link createDemoApp}: every server option except the tools, providers and pages, which the demo fixes. */
export type DemoOptions = Omit<ServerOptions, "tools" | "authorizationProviders" | "pages">;

/** The demo app and the parts tests reach into. */
export interface DemoApp {
  app: OxpApp;
  google: DemoGoogleProvider;
  counter: { value: number };
}

/**
 * The demo server: the OXP routes plus the consent pages at /demo/authorize, which need no server
 * authentication (a browser opens them) and share the server's headers and JSON errors.
 */
export function createDemoApp(options: DemoOptions = {}): DemoApp {
  const google = new DemoGoogleProvider();
  const counter = { value: 0 };
  const app = createServer({
    ...options,
    tools: demoTools(counter),
    authorizationProviders: [google],
    pages: [google.router()],
  });
  return { app, google, counter };
}
