// Test harness: a server of the test catalog on 127.0.0.1 port 0, responses checked against the spec, logs captured; the requests and assertions are @otc/test-helpers's.
import type { IncomingMessage } from "node:http";
import { Writable } from "node:stream";
import { getRequestListener } from "@hono/node-server";
import { createFetchHandler, type FetchHandler } from "../src/fetch.js";
import { localOrigin } from "../src/http/node-exchange.js";
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
 * Which adapter the HTTP tests run against: the Express one (`createServer`), the node:http one (`createHandler`)
 * when `OXP_TEST_ADAPTER=node`, or the fetch one (`createFetchHandler`, on Node through @hono/node-server's bridge)
 * when `OXP_TEST_ADAPTER=fetch`; vitest.config.ts runs the adapter-neutral tests on all three.
 */
export const ADAPTER: "express" | "node" | "fetch" =
  process.env.OXP_TEST_ADAPTER === "node" ? "node" : process.env.OXP_TEST_ADAPTER === "fetch" ? "fetch" : "express";

/** A fetch handler as a node:http listener for `listen`: the bridge passes the socket's addresses on. */
export function fetchListener(handler: FetchHandler): OxpHandler {
  const listener = getRequestListener((request, env) => {
    const { socket } = env.incoming as IncomingMessage;
    return handler(request, {
      remoteAddress: socket.remoteAddress,
      localAddress: socket.localAddress,
      origin: localOrigin(socket),
    });
  });
  return Object.assign(listener, { oxp: handler.oxp });
}

/** A server of the adapter under test, from options every adapter takes. */
export function makeServer(serverOptions: ServerOptions): OxpApp | OxpHandler {
  // The fair-share budget meters wall-clock time: on a test machine running every suite at once, a few calls (the
  // first ones pay for compiling validators) can pass it. Tests of the budget (test/fair-share.test.ts) set it.
  const options: ServerOptions = { fairness: false, ...serverOptions };
  if (ADAPTER === "express") {
    return createServer(options);
  }
  if (ADAPTER === "fetch") {
    const { nodePages, ...rest } = options;
    if (nodePages) {
      throw new Error("the fetch adapter serves fetch pages only: this test belongs in vitest.config.ts's ONCE list");
    }
    return fetchListener(createFetchHandler(rest));
  }
  // Pages written node-style (no Express API) serve on both adapters.
  const { nodePages, ...rest } = options;
  return createHandler({
    ...rest,
    ...(nodePages ? { nodePages: nodePages as readonly unknown[] as PageHandler[] } : {}),
  });
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
