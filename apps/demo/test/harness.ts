// Test harness: the real demo app on 127.0.0.1 port 0, responses checked against the spec, logs captured; the requests and assertions are @otc/test-helpers's.
import { Writable } from "node:stream";
import { createLogger, type ListenOptions, listen } from "@otc/server";
import { send } from "@otc/test-helpers/http";
import { expect } from "vitest";
import { createDemoApp, type DemoApp, type DemoOptions } from "../src/app.js";
import { createDemoHandler, type DemoHandler } from "../src/handler.js";

export {
  callTool,
  expectError,
  expectHealthy,
  expectSchema,
  type Reply,
  send,
} from "@otc/test-helpers/http";

/** A running demo server. */
export interface Running {
  baseUrl: string;
  demo: DemoApp | DemoHandler;
  /** Every log line so far, parsed. */
  logs(): Record<string, unknown>[];
  /** Every log line so far, as written. */
  rawLogs(): string;
  close(): Promise<void>;
}

/** The demo's adapter under test: Express, or node:http when `OXP_TEST_ADAPTER=node` (vitest.config.ts runs both). */
export const ADAPTER: "express" | "node" = process.env.OXP_TEST_ADAPTER === "node" ? "node" : "express";

/** Starts the demo with response validation on (a response off the spec becomes a 500) and logs captured. */
export async function startDemo(options: DemoOptions = {}, listenOptions: ListenOptions = {}): Promise<Running> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const demo = (ADAPTER === "node" ? createDemoHandler : createDemoApp)({
    validateResponses: true,
    logger: createLogger({ level: "debug", destination }),
    ...options,
  });
  const running = await listen(demo.app, { ...listenOptions, port: 0 });
  return {
    baseUrl: running.url,
    demo,
    logs: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    rawLogs: () => lines.join("\n"),
    close: running.close,
  };
}

/** Approves a challenge on the demo's consent page, as its user would. */
export async function approve(url: string): Promise<void> {
  const csrf = /name="csrf" value="([^"]*)"/.exec((await send(url)).text)?.[1] ?? "";
  const posted = await send(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: `action=approve&csrf=${encodeURIComponent(csrf)}`,
    redirect: "manual",
  });
  expect(posted.status).toBe(303);
}
