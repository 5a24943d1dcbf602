// Test harness: a server of the test catalog on 127.0.0.1 port 0, responses checked against the spec, logs captured; and the assertions on answers every HTTP test uses.
import { Writable } from "node:stream";
import { allSchemas } from "@otc/types";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { expect } from "vitest";
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

/**
 * Which adapter the HTTP tests run against: the Express one (`createServer`), or the node:http one
 * (`createHandler`) when `OXP_TEST_ADAPTER=node`; vitest.config.ts runs the adapter-neutral tests on both.
 */
export const ADAPTER: "express" | "node" = process.env.OXP_TEST_ADAPTER === "node" ? "node" : "express";

/** A server of the adapter under test, from options both adapters take. */
export function makeServer(options: ServerOptions): OxpApp | OxpHandler {
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

/** A response, its body parsed as JSON. */
export interface Reply {
  status: number;
  headers: Headers;
  // biome-ignore lint/suspicious/noExplicitAny: tests read arbitrary JSON answers; assertions check their shape.
  body: any;
  text: string;
}

/** Sends a request and reads the whole answer. */
export async function send(url: string, init: RequestInit = {}): Promise<Reply> {
  const response = await fetch(url, init);
  const text = await response.text();
  let body: unknown;
  try {
    body = text === "" ? undefined : JSON.parse(text);
  } catch {
    body = undefined;
  }
  return { status: response.status, headers: response.headers, body, text };
}

/** POST /tools/call with a JSON body (an object is serialized; a string is sent as is). */
export function callTool(baseUrl: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  return send(`${baseUrl}/tools/call`, {
    method: "POST",
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
}

const ajv = new Ajv2020({ allErrors: true, schemas: [...allSchemas] });
addFormats.default(ajv);

/** Asserts a body matches one of the spec's schemas, by title (e.g. `CallToolResponse`). */
export function expectSchema(title: string, body: unknown): void {
  const schema = allSchemas.find((entry) => entry.title === title);
  const validate = schema && ajv.getSchema(schema.$id);
  if (!validate) throw new Error(`no schema titled ${title}`);
  validate(body);
  expect(validate.errors ?? [], `${title}: ${JSON.stringify(body)}`).toEqual([]);
}

/** Asserts the server still serves: `/health` is 200 and Calculator.Add of 2 and 2 is 4. */
export async function expectHealthy(baseUrl: string, headers: Record<string, string> = {}): Promise<void> {
  expect((await send(`${baseUrl}/health`)).status).toBe(200);
  const reply = await callTool(baseUrl, { tool_id: "Calculator.Add", input: { a: 2, b: 2 } }, headers);
  expect(reply.status, reply.text).toBe(200);
  expect(reply.body).toMatchObject({ success: true, value: 4 });
}

/** Asserts the answer is a JSON error of the given status, in the spec's shape, with no stack trace. */
export function expectError(reply: Reply, status: number): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
  expect(reply.headers.get("oxp-version")).toBe("1.0");
  expectSchema(status === 422 ? "ValidationErrorResponse" : "ServerErrorResponse", reply.body);
  expect(reply.text).not.toMatch(/\n\s+at |node_modules|\/work\/|\.ts:\d+/);
}
