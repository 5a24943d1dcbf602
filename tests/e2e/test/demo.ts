// Starts the real demo app (its built dist) on 127.0.0.1 port 0 for cross-package tests.

import type { IncomingMessage } from "node:http";
import { getRequestListener } from "@hono/node-server";
import { createDemoApp, type DemoApp, type DemoOptions } from "@otc/demo/app";
import { createDemoFetchHandler, type DemoFetchHandler } from "@otc/demo/fetch";
import { createDemoHandler, type DemoHandler } from "@otc/demo/handler";
import { listen, type OxpRuntime } from "@otc/server";
import { submitConsent } from "@otc/test-helpers/consent";

/** A running demo. */
export interface Demo {
  url: string;
  demo: DemoApp | DemoHandler | DemoFetchHandler;
  /** The server's lifecycle and core, whichever adapter serves it. */
  oxp: OxpRuntime;
  close(): Promise<void>;
}

/**
 * Starts the demo, silent, with response validation on: on the Express adapter, the node:http one, or the fetch
 * handler through @hono/node-server's bridge (the socket's addresses passed on).
 */
export async function startDemo(
  options: DemoOptions = {},
  adapter: "express" | "node" | "fetch" = "express",
): Promise<Demo> {
  const settings: DemoOptions = { logger: false, validateResponses: true, ...options };
  if (adapter === "fetch") {
    const demo = createDemoFetchHandler(settings);
    const listener = getRequestListener((request, env) => {
      const { socket } = env.incoming as IncomingMessage;
      return demo.handler(request, { remoteAddress: socket.remoteAddress, localAddress: socket.localAddress });
    });
    const running = await listen(Object.assign(listener, { oxp: demo.handler.oxp }), { port: 0 });
    return { url: running.url, demo, oxp: demo.handler.oxp, close: running.close };
  }
  const demo = adapter === "node" ? createDemoHandler(settings) : createDemoApp(settings);
  const running = await listen(demo.app, { port: 0 });
  return { url: running.url, demo, oxp: demo.app.oxp, close: running.close };
}

/** Approves (or denies) a demo consent page, as a user clicking the button would. */
export async function decide(url: string, action: "approve" | "deny"): Promise<number> {
  return (await submitConsent(url, action)).status;
}
