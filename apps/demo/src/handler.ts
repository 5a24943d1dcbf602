/** Builds the demo Tool Server on the node:http adapter (`OXP_ADAPTER=node`): the same server as app.ts, without Express's routing on the hot path. */
import { inspector } from "@otc/inspector";
import { createHandler, type OxpHandler } from "@otc/server/node";
import express, { type Request, type Response } from "express";
import { type DemoOptions, type DemoParts, demoParts } from "./demo.js";

/** The demo handler and the parts tests reach into. */
export interface DemoHandler extends DemoParts {
  app: OxpHandler;
}

/** The demo server on plain node:http; its consent pages stay an Express router, run as a page. */
export function createDemoHandler(options: DemoOptions = {}): DemoHandler {
  const { google, counter, serverOptions } = demoParts(options);
  const consent = express().disable("x-powered-by").use(google.router());
  const app = createHandler({
    ...serverOptions,
    pages: [(req, res, next) => consent(req as Request, res as Response, next), inspector()],
  });
  return { app, google, counter };
}
