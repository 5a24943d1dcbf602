// The client against hostile servers on loopback: redirects to another origin, endless or gzip-bombed answers, a check_url elsewhere.
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createGzip } from "node:zlib";
import { decodeJwt } from "jose";
import { afterEach, describe, expect, it } from "vitest";
import { createClient } from "./client.js";
import { OxpCrossOriginError, OxpProtocolError, OxpResponseTooLargeError } from "./errors.js";
import { DEFAULT_MAX_RESPONSE_BYTES, sameOrigin } from "./guarded-fetch.js";

/** One request a test server received. */
interface Hit {
  method: string;
  url: string;
  headers: IncomingMessage["headers"];
  body: string;
}

/** A loopback HTTP server answering with `handle`, recording every request it receives. */
async function serve(handle: (req: IncomingMessage, res: ServerResponse, hit: Hit) => unknown) {
  const hits: Hit[] = [];
  const server: Server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      chunks.push(chunk as Buffer);
    }
    const hit = {
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      body: Buffer.concat(chunks).toString(),
    };
    hits.push(hit);
    await handle(req, res, hit);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  opened.push(close);
  return { url: `http://127.0.0.1:${port}`, hits, close };
}

const opened: (() => Promise<void>)[] = [];
afterEach(async () => {
  await Promise.all(opened.splice(0).map((close) => close()));
});

const API_KEY = "api-key-that-must-stay-home";
const SECRET_VALUE = "context-secret-that-must-stay-home";
const JWT_SECRET = "jwt-secret-for-the-hostile-tests";
const call = {
  tool_id: "Calculator.Add",
  input: { a: 1, b: 2 },
  context: { secrets: [{ id: "OPENAI_API_KEY", value: SECRET_VALUE }] },
};

/** A valid answer to a call: its call_id echoed, value 3. */
function answerCall(res: ServerResponse, hit: Hit) {
  const { call_id: callId } = JSON.parse(hit.body || "{}") as { call_id?: string };
  res.writeHead(200, { "content-type": "application/json" });
  res.end(JSON.stringify({ call_id: callId ?? "none", duration: 1, success: true, value: 3 }));
}

/** Writes `total` bytes of a JSON-looking body in 64 KiB chunks, waiting for the socket; resolves with the bytes it wrote. */
async function stream(res: ServerResponse, total: number, headers: Record<string, string | number> = {}) {
  res.writeHead(200, { "content-type": "application/json", ...headers });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  let written = 0;
  res.write('{"items": [');
  while (written < total && !res.destroyed) {
    written += chunk.length;
    if (!res.write(chunk)) {
      await new Promise<void>((resolve) => {
        const done = () => {
          res.off("drain", done);
          res.off("close", done);
          resolve();
        };
        res.on("drain", done);
        res.on("close", done);
      });
    }
  }
  res.end();
  return written;
}

describe("redirects", () => {
  const credentials = [
    ["an API key", { apiKey: API_KEY }],
    ["a JWT", { jwt: { secret: JWT_SECRET, subject: "hostile-test" } }],
  ] as const;

  for (const [what, auth] of credentials) {
    it.each([301, 302, 303, 307, 308])(
      `a %i to another origin is an OxpCrossOriginError, and that origin receives nothing (${what})`,
      async (status) => {
        const elsewhere = await serve((_req, res) => res.end("{}"));
        const server = await serve((req, res) => {
          res.writeHead(status, { location: `${elsewhere.url}${req.url}?key=stolen`, "content-length": 0 });
          res.end();
        });
        const client = createClient({ baseUrl: server.url, ...auth, retry: { maxAttempts: 3, baseDelayMs: 1 } });
        for (const attempt of [() => client.listTools(), () => client.callTool(call)]) {
          const error = await attempt().catch((e: unknown) => e);
          expect(error).toBeInstanceOf(OxpCrossOriginError);
          expect(error).toBeInstanceOf(OxpProtocolError);
          expect(error).toMatchObject({ status, serverOrigin: server.url, otherOrigin: elsewhere.url });
          const message = (error as Error).message;
          expect(message).toContain(`redirected (${status}) from ${server.url} to ${elsewhere.url}`);
          for (const kept of [API_KEY, SECRET_VALUE, JWT_SECRET, "stolen", "Bearer"]) {
            expect(message).not.toContain(kept);
          }
        }
        expect(elsewhere.hits).toEqual([]);
        // Refused, not retried: one GET /tools and one POST /tools/call.
        expect(server.hits.map((hit) => hit.method)).toEqual(["GET", "POST"]);
      },
    );
  }

  it("follows a redirect on the server's own origin: 307/308 resend the body and credentials, 303 becomes a GET", async () => {
    const server = await serve((req, res, hit) => {
      if (req.url === "/tools/call") {
        res.writeHead(307, { location: "/v2/tools/call" }).end();
      } else if (req.url === "/v2/tools/call") {
        res.writeHead(308, { location: "/v3/tools/call" }).end();
      } else if (req.url === "/v3/tools/call") {
        answerCall(res, hit);
      } else if (req.url === "/tools") {
        res.writeHead(303, { location: "/list" }).end();
      } else {
        res.writeHead(200, { "content-type": "application/json" }).end('{"items": []}');
      }
    });
    const client = createClient({ baseUrl: server.url, apiKey: API_KEY });
    expect(await client.callTool(call)).toMatchObject({ success: true, value: 3 });
    expect(await client.listTools()).toEqual([]);
    expect(server.hits.map((hit) => `${hit.method} ${hit.url}`)).toEqual([
      "POST /tools/call",
      "POST /v2/tools/call",
      "POST /v3/tools/call",
      "GET /tools",
      "GET /list",
    ]);
    const [first, second, third] = server.hits;
    expect(second?.body).toBe(first?.body);
    expect(third?.body).toBe(first?.body);
    expect(JSON.parse(third?.body ?? "")).toMatchObject({ context: { secrets: [{ value: SECRET_VALUE }] } });
    for (const hit of server.hits) {
      expect(hit.headers["oxp-api-key"]).toBe(API_KEY);
    }
  });

  it("a POST answered 303 on the same origin is sent again as a GET, without its body", async () => {
    const server = await serve((req, res) => {
      if (req.url === "/tools/call") {
        res.writeHead(303, { location: "/done" }).end();
      } else {
        res
          .writeHead(200, { "content-type": "application/json" })
          .end('{"call_id":"c","duration":1,"success":true,"value":3}');
      }
    });
    await createClient({ baseUrl: server.url }).callTool(call);
    expect(server.hits.map((hit) => [hit.method, hit.url, hit.body, hit.headers["content-type"]])).toEqual([
      ["POST", "/tools/call", expect.stringContaining(SECRET_VALUE), "application/json"],
      ["GET", "/done", "", undefined],
    ]);
  });

  it("a browser's opaque redirect (whose Location it hides) is an OxpCrossOriginError too", async () => {
    // What a browser's fetch answers for redirect: "manual"; Node's fetch gives the real 3xx instead.
    const opaque = () => {
      const response = new Response(null, { status: 200 });
      Object.defineProperties(response, { type: { value: "opaqueredirect" }, status: { value: 0 } });
      return Promise.resolve(response);
    };
    const seen: Request["redirect"][] = [];
    const client = createClient({
      baseUrl: "http://127.0.0.1:8080",
      apiKey: API_KEY,
      fetch: (input) => {
        seen.push((input as Request).redirect);
        return opaque();
      },
    });
    const error = await client.callTool(call).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpCrossOriginError);
    expect(error).toMatchObject({ serverOrigin: "http://127.0.0.1:8080", otherOrigin: undefined });
    expect((error as Error).message).toContain("POST /tools/call was answered with a redirect");
    expect(seen).toEqual(["manual"]);
  });

  it("stops after 5 redirects, even on its own origin", async () => {
    const server = await serve((_req, res) => res.writeHead(307, { location: "/tools" }).end());
    const error = await createClient({ baseUrl: server.url })
      .listTools()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpProtocolError);
    expect((error as Error).message).toContain("redirected more than 5 times");
    expect(server.hits).toHaveLength(6);
  });
});

describe("the size of answers", () => {
  it("defaults to 16 MiB and refuses a limit that is not a positive whole number", () => {
    expect(DEFAULT_MAX_RESPONSE_BYTES).toBe(16 * 1024 * 1024);
    for (const limit of [0, -1, 1.5, Number.NaN]) {
      expect(() => createClient({ baseUrl: "http://127.0.0.1:1", maxResponseBytes: limit })).toThrow(RangeError);
    }
  });

  it.each([
    ["GET /tools", (client: ReturnType<typeof createClient>) => client.listTools()],
    ["POST /tools/call", (client: ReturnType<typeof createClient>) => client.callTool(call)],
  ])("%s: an endless answer is cut off at the default limit, and the server stops being read", async (_what, send) => {
    const HUNDRED_MB = 100 * 1024 * 1024;
    let written: Promise<number> | undefined;
    const server = await serve((_req, res) => {
      written = stream(res, HUNDRED_MB);
    });
    const before = process.memoryUsage().rss;
    const error = await send(createClient({ baseUrl: server.url })).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpResponseTooLargeError);
    expect(error).toMatchObject({ status: 200, limitBytes: DEFAULT_MAX_RESPONSE_BYTES });
    // The server could write the limit and what the sockets buffer, never the 100 MB.
    expect(await written).toBeLessThan(DEFAULT_MAX_RESPONSE_BYTES + 16 * 1024 * 1024);
    expect(process.memoryUsage().rss - before).toBeLessThan(HUNDRED_MB);
    expect(server.hits).toHaveLength(1);
  });

  it("refuses a Content-Length over the limit before reading the body", async () => {
    let written: Promise<number> | undefined;
    const server = await serve((_req, res) => {
      written = stream(res, 50 * 1024 * 1024, { "content-length": 100 * 1024 * 1024 });
    });
    const error = await createClient({ baseUrl: server.url, maxResponseBytes: 1024 })
      .listTools()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpResponseTooLargeError);
    expect((error as Error).message).toContain("maxResponseBytes: 1024 bytes");
    expect(await written).toBeLessThan(16 * 1024 * 1024);
  });

  it("counts the decoded bytes of a gzipped answer: a small bomb is cut off at the limit", async () => {
    const GIGABYTE = 1024 * 1024 * 1024;
    let fed = 0;
    const server = await serve(async (_req, res) => {
      res.writeHead(200, { "content-type": "application/json", "content-encoding": "gzip" });
      const gzip = createGzip();
      gzip.pipe(res);
      res.on("close", () => gzip.destroy());
      const zeros = Buffer.alloc(1024 * 1024, 0x20);
      gzip.write('{"items": [');
      while (fed < GIGABYTE && !res.destroyed) {
        fed += zeros.length;
        if (!gzip.write(zeros)) {
          await new Promise((resolve) => gzip.once("drain", resolve));
        }
      }
      gzip.end();
    });
    const error = await createClient({ baseUrl: server.url, maxResponseBytes: 1024 * 1024 })
      .listTools()
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(OxpResponseTooLargeError);
    // A whole read would have decoded a gigabyte; the client stopped after the first megabyte or so.
    await expect.poll(() => server.hits.length).toBe(1);
    expect(fed).toBeLessThan(256 * 1024 * 1024);
  });

  it("bounds error answers and check_url answers too", async () => {
    const server = await serve((_req, res) => {
      res.writeHead(400, { "content-type": "application/json" });
      res.end(JSON.stringify({ message: "x".repeat(4096) }));
    });
    const client = createClient({ baseUrl: server.url, maxResponseBytes: 1024 });
    await expect(client.callTool(call)).rejects.toBeInstanceOf(OxpResponseTooLargeError);
    await expect(
      client.checkAuthorization({ id: "p", url: `${server.url}/consent`, check_url: "/authorization/challenges/p" }),
    ).rejects.toBeInstanceOf(OxpResponseTooLargeError);
  });
});

describe("check_url", () => {
  it("sameOrigin compares scheme, host and port, resolving a relative URL against the server", () => {
    const base = "http://127.0.0.1:8080/";
    expect(sameOrigin("/authorization/challenges/x", base)).toBe(true);
    expect(sameOrigin("http://127.0.0.1:8080/x", "http://127.0.0.1:8080")).toBe(true);
    expect(sameOrigin("http://127.0.0.1:8081/x", base)).toBe(false);
    expect(sameOrigin("https://127.0.0.1:8080/x", base)).toBe(false);
    expect(sameOrigin("http://localhost:8080/x", base)).toBe(false);
    expect(sameOrigin("//evil.example/x", base)).toBe(false);
    expect(sameOrigin("http://user:pw@127.0.0.1:8080@evil.example/x", base)).toBe(false);
    expect(sameOrigin("data:text/plain,hi", base)).toBe(false);
    expect(sameOrigin("/x", "not a url")).toBe(false);
    expect(sameOrigin("/x", "file:///tmp/")).toBe(false);
  });

  it("is never polled on another origin: checkAuthorization and waitForAuthorization throw, sending nothing", async () => {
    const elsewhere = await serve((_req, res) => res.writeHead(200).end('{"status":"completed"}'));
    const server = await serve((_req, res) => res.writeHead(200).end('{"status":"completed"}'));
    const client = createClient({ baseUrl: server.url, apiKey: API_KEY });
    const challenge = { id: "google", url: `${elsewhere.url}/consent`, check_url: `${elsewhere.url}/status` };
    for (const poll of [() => client.checkAuthorization(challenge), () => client.waitForAuthorization(challenge)]) {
      const error = await poll().catch((e: unknown) => e);
      expect(error).toBeInstanceOf(OxpCrossOriginError);
      expect(error).toMatchObject({ status: 0, serverOrigin: server.url, otherOrigin: elsewhere.url });
      expect((error as Error).message).toContain(`check_url is on ${elsewhere.url}, not on the server's origin`);
    }
    expect(elsewhere.hits).toEqual([]);
    expect(server.hits).toEqual([]);
    // On the server's origin (the consent page may be anywhere), it is polled with the credentials.
    expect(await client.checkAuthorization({ ...challenge, check_url: "/authorization/challenges/google" })).toBe(
      "completed",
    );
    expect(server.hits.map((hit) => [hit.url, hit.headers["oxp-api-key"]])).toEqual([
      ["/authorization/challenges/google", API_KEY],
    ]);
  });

  it("does not follow a check_url's redirect to another origin", async () => {
    const elsewhere = await serve((_req, res) => res.writeHead(200).end('{"status":"completed"}'));
    const server = await serve((_req, res) => res.writeHead(302, { location: `${elsewhere.url}/status` }).end());
    const client = createClient({ baseUrl: server.url, apiKey: API_KEY });
    const challenge = { id: "google", url: `${server.url}/consent`, check_url: `${server.url}/status` };
    await expect(client.checkAuthorization(challenge)).rejects.toBeInstanceOf(OxpCrossOriginError);
    expect(elsewhere.hits).toEqual([]);
  });
});

describe("JWTs", () => {
  it("carry the subject as sub, as the server receives them", async () => {
    const server = await serve((_req, res) => res.writeHead(200).end('{"items": []}'));
    await createClient({ baseUrl: server.url, jwt: { secret: JWT_SECRET, subject: "billing-agent" } }).listTools();
    const token = (server.hits[0]?.headers.authorization ?? "").replace(/^Bearer /, "");
    expect(decodeJwt(token)).toMatchObject({ sub: "billing-agent" });
  });
});
