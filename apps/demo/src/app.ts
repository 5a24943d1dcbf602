/** Builds the demo Tool Server: the catalog, the demo Google provider and its consent pages. */
import { createServer, type OxpApp, type ServerOptions } from "@otc/server";
import express, { type Express } from "express";
import { DemoGoogleProvider } from "./google-provider.js";
import { demoTools } from "./tools.js";

/** Options of {@link createDemoApp}: every server option except the tools and providers, which the demo fixes. */
export type DemoOptions = Omit<ServerOptions, "tools" | "authorizationProviders">;

/** The demo app and the parts tests reach into. */
export interface DemoApp {
  app: Express;
  /** The OXP app inside `app` (its lifecycle is what `listen` manages). */
  oxp: OxpApp;
  google: DemoGoogleProvider;
  counter: { value: number };
}

/**
 * The demo server: consent pages at /demo/authorize (no authentication: a browser opens them), then
 * the OXP app for everything else.
 */
export function createDemoApp(options: DemoOptions = {}): DemoApp {
  const google = new DemoGoogleProvider();
  const counter = { value: 0 };
  const oxp = createServer({ ...options, tools: demoTools(counter), authorizationProviders: [google] });
  const app = express();
  app.disable("x-powered-by");
  app.use(google.router());
  app.use(oxp);
  // listen() manages the OXP app's lifecycle through app.locals.
  app.locals.oxp = oxp.locals.oxp;
  app.locals.core = oxp.locals.core;
  return { app, oxp, google, counter };
}
