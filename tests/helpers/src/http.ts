// The requests and assertions every HTTP test uses, whichever server it starts (@otc/server's test catalog, the demo): answers read whole, bodies checked against the spec's schemas.
import { allSchemas } from "@otc/types";
import { createAjv } from "@otc/types/ajv";
import { expect } from "vitest";

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

const ajv = createAjv({ allErrors: true, schemas: allSchemas });

/** Asserts a body matches one of the spec's schemas, by title (e.g. `CallToolResponse`). */
export function expectSchema(title: string, body: unknown): void {
  const schema = allSchemas.find((entry) => entry.title === title);
  const validate = schema && ajv.getSchema(schema.$id);
  if (!validate) {
    throw new Error(`no schema titled ${title}`);
  }
  validate(body);
  expect(validate.errors ?? [], `${title}: ${JSON.stringify(body)}`).toEqual([]);
}

/** Asserts the server still serves: `/health` is 200 and Calculator.Add of 2 and 2 is 4 (every test catalog has it). */
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
