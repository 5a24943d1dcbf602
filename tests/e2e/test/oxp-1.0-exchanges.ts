// What a published OXP 1.0 draft client sends (docs: ../shared notes on oxp-python 0.1.1 and oxp-go 0.0.2), and the
// answers it got, normalized: shared by the golden test and by the script that recorded the golden file.
import { createServer as createHttpServer, request } from "node:http";
import type { AddressInfo } from "node:net";

/** What the recorder and the test need of an @otc/server build: the same calls, whichever version. */
export interface ServerModule {
  defineTool(spec: unknown): unknown;
  createHandler(options: unknown): (req: unknown, res: unknown) => void;
  OxpToolError: new (message: string, options?: Record<string, unknown>) => Error;
}

const KEY = "draft-client-key-0123456789abcdef";

/** A catalog of a few tools covering each kind of answer, built with `server`'s own defineTool. */
function catalog(server: ServerModule): unknown[] {
  const { defineTool, OxpToolError } = server;
  return [
    defineTool({
      toolkit: "Calculator",
      name: "Add",
      version: "1.0.0",
      description: "Adds two numbers together.",
      annotations: { read_only: true, idempotent: true },
      inputSchema: {
        type: "object",
        properties: {
          a: { type: "number", description: "The first number." },
          b: { type: "number", description: "The second number." },
        },
        required: ["a", "b"],
        additionalProperties: false,
      },
      outputSchema: { type: "number" },
      run: ({ a, b }: { a: number; b: number }) => a + b,
    }),
    defineTool({
      toolkit: "Doorbell",
      name: "Ring",
      version: "0.1.0",
      description: "Rings a doorbell that is never there.",
      inputSchema: {},
      outputSchema: null,
      run: () => {
        throw new OxpToolError("Doorbell not found", {
          canRetry: true,
          retryAfterMs: 500,
          developerMessage: "No such bell",
        });
      },
    }),
    defineTool({
      toolkit: "Mail",
      name: "Read",
      version: "2.0.0",
      description: "Reads someone's mail: needs to know whose.",
      requirements: { user_id: true },
      inputSchema: {},
      outputSchema: {},
      run: () => [],
    }),
  ];
}

/** One request as a draft client sends it. */
interface Exchange {
  name: string;
  method: string;
  path: string;
  headers: Record<string, string>;
  body?: string;
}

/** Bearer of the key always, Content-Type even on GETs, never OXP-Version: as the generated draft clients do. */
const DRAFT = { authorization: `Bearer ${KEY}`, "content-type": "application/json", accept: "application/json" };
const call = (name: string, request: unknown, headers: Record<string, string> = DRAFT): Exchange => ({
  name,
  method: "POST",
  path: "/tools/call",
  headers,
  body: JSON.stringify({ request }),
});

export const EXCHANGES: readonly Exchange[] = [
  { name: "health", method: "GET", path: "/health", headers: { ...DRAFT, accept: "" }, body: "{}" },
  { name: "list", method: "GET", path: "/tools", headers: DRAFT },
  { name: "list, a GET body", method: "GET", path: "/tools", headers: DRAFT, body: "{}" },
  { name: "list, gzip accepted", method: "GET", path: "/tools", headers: { ...DRAFT, "accept-encoding": "gzip" } },
  call("call", { tool_id: "Calculator.Add", input: { a: 2, b: 40 }, call_id: "draft-1" }),
  call("replay", { tool_id: "Calculator.Add", input: { a: 2, b: 40 }, call_id: "draft-1" }),
  call("call_id reused", { tool_id: "Calculator.Add", input: { a: 1, b: 1 }, call_id: "draft-1" }),
  call("tool error", { tool_id: "Doorbell.Ring", call_id: "draft-2" }),
  call("invalid input", { tool_id: "Calculator.Add", input: { a: "2" } }),
  call("unknown tool", { tool_id: "Calculator.Subtract" }),
  call("unknown version", { tool_id: "Calculator.Add@2" }),
  call("missing user_id", { tool_id: "Mail.Read" }),
  call("no credential", { tool_id: "Calculator.Add", input: { a: 1, b: 2 } }, { "content-type": "application/json" }),
  { name: "unknown path", method: "GET", path: "/tools/calls/draft-1", headers: DRAFT },
  { name: "method not allowed", method: "DELETE", path: "/tools", headers: DRAFT },
  {
    name: "unsupported version",
    method: "GET",
    path: "/tools",
    headers: { ...DRAFT, "oxp-version": "2.0" },
  },
];

/** An answer as compared: status, headers but those that vary by the clock, and the body with ids and durations fixed. */
export interface RecordedAnswer {
  status: number;
  headers: Record<string, string>;
  body: string;
}

const UUID = /[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}/g;

/** Runs every exchange against a fresh server of `server`'s build, in order; the answers by exchange name. */
export async function recordAnswers(server: ServerModule): Promise<Record<string, RecordedAnswer>> {
  const handler = server.createHandler({ tools: catalog(server), auth: { apiKeys: [KEY] }, logger: false });
  const http = createHttpServer(handler as never);
  await new Promise<void>((resolve) => http.listen(0, "127.0.0.1", resolve));
  const base = `http://127.0.0.1:${(http.address() as AddressInfo).port}`;
  const answers: Record<string, RecordedAnswer> = {};
  try {
    for (const exchange of EXCHANGES) {
      const reply = await send(`${base}${exchange.path}`, exchange);
      const encoded = reply.headers["content-encoding"] === "gzip";
      const text = encoded ? `gzip:${reply.bytes.toString("base64")}` : reply.bytes.toString("utf8");
      const headers: Record<string, string> = {};
      for (const [name, value] of Object.entries(reply.headers)) {
        if (name !== "date" && name !== "keep-alive" && name !== "content-length" && value !== undefined) {
          headers[name] = Array.isArray(value) ? value.join(", ") : value;
        }
      }
      answers[exchange.name] = {
        status: reply.status,
        headers,
        body: text.replace(UUID, "<uuid>").replace(/"duration":[0-9.e+-]+/g, '"duration":0'),
      };
    }
  } finally {
    http.closeAllConnections();
    await new Promise((resolve) => http.close(resolve));
  }
  return answers;
}

/** One request over node:http, as the draft clients send them (a GET may carry a body). */
function send(url: string, exchange: Exchange) {
  return new Promise<{ status: number; headers: Record<string, string | string[] | undefined>; bytes: Buffer }>(
    (resolve, reject) => {
      // A body goes with its length, as the Go client's net/http sends it (never chunked).
      const length = exchange.body === undefined ? {} : { "content-length": String(Buffer.byteLength(exchange.body)) };
      const headers = { ...exchange.headers, ...length };
      const outgoing = request(url, { method: exchange.method, headers }, (incoming) => {
        const chunks: Buffer[] = [];
        incoming.on("data", (chunk: Buffer) => chunks.push(chunk));
        incoming.on("end", () =>
          resolve({ status: incoming.statusCode ?? 0, headers: incoming.headers, bytes: Buffer.concat(chunks) }),
        );
        incoming.on("error", reject);
      });
      outgoing.on("error", reject);
      outgoing.end(exchange.body);
    },
  );
}
