// Starts the real demo app (its built dist) on 127.0.0.1 port 0 for cross-package tests.
import { createDemoApp, type DemoApp, type DemoOptions } from "@otc/demo/app";
import { createDemoHandler, type DemoHandler } from "@otc/demo/handler";
import { listen } from "@otc/server";

/** A running demo. */
export interface Demo {
  url: string;
  demo: DemoApp | DemoHandler;
  close(): Promise<void>;
}

/** Starts the demo, silent, with response validation on, on the Express adapter or the node:http one. */
export async function startDemo(options: DemoOptions = {}, adapter: "express" | "node" = "express"): Promise<Demo> {
  const create = adapter === "node" ? createDemoHandler : createDemoApp;
  const demo = create({ logger: false, validateResponses: true, ...options });
  const running = await listen(demo.app, { port: 0 });
  return { url: running.url, demo, close: running.close };
}

/** Approves (or denies) a demo consent page, as a user clicking the button would. */
export async function decide(url: string, action: "approve" | "deny"): Promise<number> {
  const page = await (await fetch(url)).text();
  const csrf = /name="csrf" value="([^"]*)"/.exec(page)?.[1] ?? "";
  const response = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `action=${action}&csrf=${encodeURIComponent(csrf)}`,
    redirect: "manual",
  });
  return response.status;
}
