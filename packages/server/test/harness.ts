// Test harness: a server of the test catalog on 127.0.0.1 port 0, responses checked against the spec, logs captured; the requests and assertions are @otc/test-helpers's.
import { Writable } from "node:stream";
import {
  createHandler,
  createLogger,
  createServer,
  type ListenOptions,
  listen,
  type OxpApp,
  type OxpHandler,
  type PageHandler,
  type ServerOptions,
} from "../src/index.js";
import { TestAuthorizationProvider, testTools } from "./tools.js";

export {
  callTool,
  expectError,
  expectHealthy,
  expectSchema,
  type Reply,
  send,
} from "@otc/test-helpers/http";

/**
 * Which adapter the HTTP tests run against: the Express one (`createServer`), or the node:http one
 * (`createHandler`) when `OXP_TEST_ADAPTER=node`; vitest.config.ts runs the adapter-neutral tests on both.
 */
export const ADAPTER: "express" | "node" = process.env.OXP_TEST_ADAPTER === "node" ? "node" : "express";

/** A server of the adapter under test, from options both adapters take. */
export function makeServer(serverOptions: ServerOptions): OxpApp | OxpHandler {
  // The fair-share budget meters wall-clock time: on a test machine running every suite at once, a few calls (the
  // first ones pay for compiling validators) can pass it. Tests of the budget (test/fair-share.test.ts) set it.
  const options: ServerOptions = { fairness: false, ...serverOptions };
  if (ADAPTER === "express") return createServer(options);
  // Pages written node-style (no Express API) serve on both adapters.
  const { pages, ...rest } = options;
  return createHandler({ ...rest, ...(pages ? { pages: pages as readonly unknown[] as PageHandler[] } : {}) });
}

/** Options of {@link startServer}: every server option but the tools and providers, which are the test catalog's. */
export type TestServerOptions = Omit<ServerOptions, "tools" | "authorizationProviders">;

/** A running test server. */
export interface Running {
  baseUrl: string;
  app: OxpApp | OxpHandler;
  /** The state of Counter.Increment. */
  counter: { value: number };
  /** The `google` provider: decides challenges as a user would. */
  provider: TestAuthorizationProvider;
  /** Every log line so far, parsed. */
  logs(): Record<string, unknown>[];
  /** Every log line so far, as written. */
  rawLogs(): string;
  close(): Promise<void>;
}

/** Starts the test catalog with response validation on (a response off the spec becomes a 500) and logs captured. */
export async function startServer(
  options: TestServerOptions = {},
  listenOptions: ListenOptions = {},
): Promise<Running> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const counter = { value: 0 };
  const provider = new TestAuthorizationProvider();
  const app = makeServer({
    validateResponses: true,
    logger: createLogger({ level: "debug", destination }),
    ...options,
    tools: testTools(counter),
    authorizationProviders: [provider],
  });
  const running = await listen(app, { ...listenOptions, port: 0 });
  return {
    baseUrl: running.url,
    app,
    counter,
    provider,
    logs: () => lines.map((line) => JSON.parse(line) as Record<string, unknown>),
    rawLogs: () => lines.join("\n"),
    close: running.close,
  };
}
