// Test harness: the real demo app on 127.0.0.1 port 0, responses checked against the spec, logs captured.
import { Writable } from "node:stream";
import { createLogger, type ListenOptions, listen } from "@otc/server";
import { allSchemas } from "@otc/types";
import { Ajv2020 } from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { expect } from "vitest";
import { createDemoApp, type DemoApp, type DemoOptions } from "../src/app.js";

/** A running demo server. */
export interface Running {
  baseUrl: string;
  demo: DemoApp;
  /** Every log line so far, parsed. */
  logs(): Record<string, unknown>[];
  /** Every log line so far, as written. */
  rawLogs(): string;
  close(): Promise<void>;
}

/** Starts the demo with response validation on (a response off the spec becomes a 500) and logs captured. */
export async function startDemo(options: DemoOptions = {}, listenOptions: ListenOptions = {}): Promise<Running> {
  const lines: string[] = [];
  const destination = new Writable({
    write(chunk, _encoding, done) {
      lines.push(...String(chunk).split("\n").filter(Boolean));
      done();
    },
  });
  const demo = createDemoApp({
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

/** Asserts the answer is a JSON error of the given status, in the spec's shape, with no stack trace. */
export function expectError(reply: Reply, status: number): void {
  expect(reply.status, reply.text).toBe(status);
  expect(reply.headers.get("content-type")).toMatch(/^application\/json/);
  expect(reply.headers.get("oxp-version")).toBe("1.0");
  expectSchema(status === 422 ? "ValidationErrorResponse" : "ServerErrorResponse", reply.body);
  expect(reply.text).not.toMatch(/\n\s+at |node_modules|\/work\/|\.ts:\d+/);
}
