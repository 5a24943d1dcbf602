// How a request's body reaches fetch: read once, and handed to the global fetch with the URL as the init's bytes (no
// Request, no stream, no copy of one), the same bytes again for a try with a new token and for a 307; and
// openapi-fetch's drafts (its `Request` option) read back as the Requests it would otherwise build.
import { createServer as createHttpServer, type IncomingMessage, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createHandler, defineTool, listen, type RunningServer } from "@otc/server/node";
import { OXP_VERSION, type paths } from "@otc/types";
import { SignJWT } from "jose";
import createFetchClient from "openapi-fetch";
import { afterAll, afterEach, beforeAll, describe, expect, it, vi } from "vitest";
import { createClient } from "./client.js";
import { type OutgoingRequest, outgoingRequest, RequestDraft } from "./guarded-fetch.js";

const SECRET = "request-bodies-test-secret-0123456789";

const add = defineTool({
  toolkit: "Calculator",
  name: "Add",
  version: "1.0.0",
  description: "Adds two numbers.",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number", description: "One." }, b: { type: "number", description: "The other." } },
    required: ["a", "b"],
  },
  outputSchema: { type: "number" },
  run: ({ a, b }: { a: number; b: number }) => a + b,
});

/** An HS256 JWT whose `exp` is `expiresIn` seconds from now (negative: expired). */
function mint(expiresIn: number): Promise<string> {
  const now = Math.floor(Date.now() / 1000);
  return new SignJWT({})
    .setProtectedHeader({ alg: "HS256", typ: "JWT" })
    .setSubject("agent")
    .setIssuedAt(Math.min(now, now + expiresIn - 60))
    .setExpirationTime(now + expiresIn)
    .sign(new TextEncoder().encode(SECRET));
}

let open: RunningServer;
let authed: RunningServer;
beforeAll(async () => {
  open = await listen(createHandler({ tools: [add], logger: false }), { port: 0 });
  authed = await listen(createHandler({ tools: [add], logger: false, auth: { jwt: { secret: SECRET } } }), {
    port: 0,
  });
});
afterAll(async () => {
  await Promise.all([open?.close(), authed?.close()]);
});
afterEach(() => {
  vi.unstubAllGlobals();
});

const realFetch = globalThis.fetch;

/** What the global fetch was given for one request, read when it was given (a Request is named, not read). */
interface Given {
  input: string;
  method: string | undefined;
  body: string;
  authorization: string | null;
  redirect: RequestInit["redirect"];
}

/**
 * Puts a recording fetch in place of the global one, which a client made now takes as its own: it records what it was
 * given and sends it on with the real fetch, so the real server answers.
 */
function recordGlobalFetch(): Given[] {
  const given: Given[] = [];
  vi.stubGlobal("fetch", (input: string | URL | Request, init?: RequestInit) => {
    const body = init?.body;
    given.push({
      input: input instanceof Request ? "a Request" : String(input),
      method: init?.method,
      body: typeof body === "string" ? body : body instanceof ArrayBuffer ? "an ArrayBuffer" : `${body}`,
      authorization: new Headers(init?.headers).get("authorization"),
      redirect: init?.redirect,
    });
    return realFetch(input, init);
  });
  return given;
}

const call = { tool_id: "Calculator.Add@1.0.0", input: { a: 1, b: 2 } };

describe("a request's body on its way to the global fetch", () => {
  it("is the JSON text in the init, beside the URL: no Request, no stream", async () => {
    const given = recordGlobalFetch();
    const client = createClient({ baseUrl: open.url });
    expect(await client.callTool(call)).toMatchObject({ success: true, value: 3 });
    expect(given).toEqual([
      {
        input: `${open.url}/tools/call`,
        method: "POST",
        body: expect.any(String),
        authorization: null,
        redirect: "manual",
      },
    ]);
    expect(JSON.parse(given[0]?.body ?? "")).toMatchObject(call);
  });

  it("is the same text again for the try after a 401, with the new token", async () => {
    const given = recordGlobalFetch();
    const [expired, fresh] = [await mint(-3600), await mint(300)];
    const client = createClient({
      baseUrl: authed.url,
      accessToken: ({ reason }) => (reason === "initial" ? expired : fresh),
    });
    expect(await client.callTool(call)).toMatchObject({ success: true, value: 3 });
    expect(given.map(({ input, authorization }) => [input, authorization])).toEqual([
      [`${authed.url}/tools/call`, `Bearer ${expired}`],
      [`${authed.url}/tools/call`, `Bearer ${fresh}`],
    ]);
    expect(typeof given[0]?.body).toBe("string");
    expect(given[1]?.body).toBe(given[0]?.body);
  });

  it("is the same text again for a 307 on the server's origin", async () => {
    const bodies: string[] = [];
    const server: Server = createHttpServer(async (req: IncomingMessage, res) => {
      let body = "";
      for await (const chunk of req) {
        body += chunk;
      }
      bodies.push(body);
      if (req.url === "/tools/call") {
        res.writeHead(307, { location: "/v2/tools/call" }).end();
        return;
      }
      const { call_id } = JSON.parse(body) as { call_id: string };
      res
        .writeHead(200, { "content-type": "application/json" })
        .end(JSON.stringify({ call_id, duration: 1, success: true, value: 3 }));
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      const given = recordGlobalFetch();
      expect(await createClient({ baseUrl: url }).callTool(call)).toMatchObject({ success: true, value: 3 });
      expect(given.map(({ input, method }) => [input, method])).toEqual([
        [`${url}/tools/call`, "POST"],
        [`${url}/v2/tools/call`, "POST"],
      ]);
      expect(typeof given[0]?.body).toBe("string");
      expect(given[1]?.body).toBe(given[0]?.body);
      expect(bodies).toEqual([given[0]?.body, given[0]?.body]);
    } finally {
      server.closeAllConnections();
      await new Promise((resolve) => server.close(resolve));
    }
  });
});

/** What a request read back says, its body as text and its signal's state: to compare a draft with a Request. */
async function described(request: OutgoingRequest) {
  const { body } = request;
  return {
    url: request.url,
    method: request.method,
    headers: [...request.headers],
    body: body instanceof ArrayBuffer ? new TextDecoder().decode(body) : body,
    signal: request.signal === undefined ? "none" : request.signal.aborted ? "aborted" : "not aborted",
  };
}

describe("RequestDraft, openapi-fetch's Request option", () => {
  it("reads back as the Request openapi-fetch would build: URL, method, headers, body, and a signal that follows", async () => {
    const seen: Record<string, OutgoingRequest[]> = {};
    const controller = new AbortController();
    for (const [name, Request] of [
      ["Request", globalThis.Request],
      ["RequestDraft", RequestDraft as unknown as typeof globalThis.Request],
    ] as const) {
      const read: OutgoingRequest[] = [];
      seen[name] = read;
      const api = createFetchClient<paths>({
        baseUrl: open.url,
        redirect: "manual",
        Request,
        fetch: async (request) => {
          const outgoing = await outgoingRequest(request);
          read.push(outgoing);
          const { url, method, headers, body } = outgoing;
          return realFetch(url, { method, headers, ...(body === undefined ? {} : { body }) });
        },
      });
      const headers = { "OXP-Version": OXP_VERSION, "X-Extra": "one" };
      const posted = await api.POST("/tools/call", { body: call, headers, signal: controller.signal, parseAs: "text" });
      expect([posted.response.status, JSON.parse(posted.data ?? "")]).toMatchObject([200, { success: true, value: 3 }]);
      const listed = await api.GET("/tools", { params: { query: { limit: 1 } }, headers, signal: controller.signal });
      expect(listed.response.status).toBe(200);
    }
    controller.abort();
    const [viaRequest, viaDraft] = [seen.Request ?? [], seen.RequestDraft ?? []];
    expect(viaDraft).toHaveLength(2);
    expect(await Promise.all(viaDraft.map(described))).toEqual(await Promise.all(viaRequest.map(described)));
    expect(viaDraft.map((request) => request.signal?.aborted)).toEqual([true, true]);
  });
});
