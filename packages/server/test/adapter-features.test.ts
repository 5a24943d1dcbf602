// What both adapters add around the contract: the tool list's ETag, CORS, remembered JWTs, shared-state faults as 503, the call observer.
import { get as httpGet, type IncomingHttpHeaders } from "node:http";
import { gunzipSync } from "node:zlib";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { receive } from "@otc/test-helpers/raw-http";
import { verifies } from "@otc/test-helpers/verifies";
import { SignJWT } from "jose";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import {
  type CallEvent,
  type IdempotencyEntry,
  type IdempotencyKey,
  type IdempotencyStore,
  InProcessTaskStore,
  listen,
  MemoryIdempotencyStore,
  MemoryTokenStore,
  type RunningServer,
  type StoredToken,
  type TokenOwner,
} from "../src/index.js";
import {
  ADAPTER,
  callTool,
  expectError,
  expectHealthy,
  makeServer,
  type Running,
  send,
  startServer,
} from "./harness.js";
import { testTools } from "./tools.js";

const SECRET = "another-shared-secret-of-32-bytes-or-more";

describe("GET /tools and its ETag", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startServer();
  });
  afterAll(() => server.close());

  verifies(
    "endpoints.list-tools",
    "serves the same list with a strong ETag, and 304 to a client that has it",
    async () => {
      const first = await send(`${server.baseUrl}/tools`);
      expect(first.status).toBe(200);
      const etag = first.headers.get("etag");
      expect(etag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);
      const second = await send(`${server.baseUrl}/tools`);
      expect(second.headers.get("etag")).toBe(etag);
      expect(second.text).toBe(first.text);

      const cached = await send(`${server.baseUrl}/tools`, { headers: { "If-None-Match": etag as string } });
      expect(cached.status).toBe(304);
      expect(cached.text).toBe("");
      expect(cached.headers.get("oxp-version")).toBe("1.0");
      const listed = await send(`${server.baseUrl}/tools`, { headers: { "If-None-Match": `"other", ${etag}` } });
      expect(listed.status).toBe(304);

      const stale = await send(`${server.baseUrl}/tools`, { headers: { "If-None-Match": '"not-this-one"' } });
      expect(stale.status).toBe(200);
      expect(stale.body.items.length).toBeGreaterThan(0);
    },
  );
});

/** GET /tools as raw bytes (fetch would decompress), with the given request headers. */
function getRaw(url: string, headers: Record<string, string>) {
  return new Promise<{ status: number; headers: IncomingHttpHeaders; body: Buffer }>((resolve, reject) => {
    const req = httpGet(url, { headers }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body: Buffer.concat(chunks) }));
      res.on("error", reject);
    });
    req.on("error", reject);
  });
}

describe("GET /tools gzipped", () => {
  let server: Running;
  beforeAll(async () => {
    // The test catalog's list is past the 1 KiB below which it is sent as is.
    server = await startServer();
  });
  afterAll(() => server.close());

  it("gzips the list for a client that accepts it, with its own ETag, and 304s either form's ETag", async () => {
    const plain = await getRaw(`${server.baseUrl}/tools`, { "Accept-Encoding": "identity" });
    expect(plain.status).toBe(200);
    expect(plain.headers["content-encoding"]).toBeUndefined();
    expect(plain.headers.vary).toBe("Accept-Encoding, OXP-Extensions");
    const list = JSON.parse(plain.body.toString("utf8"));
    expect(plain.body.length).toBeGreaterThan(1024);

    const zipped = await getRaw(`${server.baseUrl}/tools`, { "Accept-Encoding": "br;q=1, gzip;q=0.8" });
    expect(zipped.status).toBe(200);
    expect(zipped.headers["content-encoding"]).toBe("gzip");
    expect(zipped.headers.vary).toBe("Accept-Encoding, OXP-Extensions");
    expect(zipped.headers["oxp-version"]).toBe("1.0");
    expect(Number(zipped.headers["content-length"])).toBe(zipped.body.length);
    expect(zipped.body.length).toBeLessThan(plain.body.length / 2);
    expect(JSON.parse(gunzipSync(zipped.body).toString("utf8"))).toEqual(list);
    expect(zipped.headers.etag).toMatch(/^"[A-Za-z0-9_-]{20,}"$/);
    expect(zipped.headers.etag).not.toBe(plain.headers.etag);

    // A client that refuses gzip, or sends no Accept-Encoding, gets the list as is.
    for (const headers of [{ "Accept-Encoding": "gzip;q=0, identity" }, {}] as Record<string, string>[]) {
      const answer = await getRaw(`${server.baseUrl}/tools`, headers);
      expect(answer.headers["content-encoding"]).toBeUndefined();
      expect(answer.body.equals(plain.body)).toBe(true);
    }
    for (const etag of [plain.headers.etag, zipped.headers.etag] as string[]) {
      const cached = await getRaw(`${server.baseUrl}/tools`, { "Accept-Encoding": "gzip", "If-None-Match": etag });
      expect(cached.status).toBe(304);
      expect(cached.body.length).toBe(0);
      expect(cached.headers.etag).toBe(etag);
      expect(cached.headers["oxp-version"]).toBe("1.0");
    }
    // fetch() asks for gzip itself and reads the same list.
    const fetched = await send(`${server.baseUrl}/tools`);
    expect(fetched.body).toEqual(list);
  });

  it("sends a list under 1 KiB as is", async () => {
    const small = await listen(makeServer({ tools: testTools().slice(0, 1), logger: false }), { port: 0 });
    try {
      const answer = await getRaw(`${small.url}/tools`, { "Accept-Encoding": "gzip" });
      expect(answer.status).toBe(200);
      expect(answer.body.length).toBeLessThan(1024);
      expect(answer.headers["content-encoding"]).toBeUndefined();
      expect(answer.headers.vary).toBe("Accept-Encoding, OXP-Extensions");
    } finally {
      await small.close();
    }
  });
});

describe("CORS", () => {
  let server: Running;
  let closed: Running;
  beforeAll(async () => {
    [server, closed] = await Promise.all([
      startServer({ cors: { origins: ["http://inspector.test"] }, auth: { apiKeys: ["cors-key-0123456789"] } }),
      startServer(),
    ]);
  });
  afterAll(() => Promise.all([server.close(), closed.close()]));

  it("answers an allowed origin's preflight without credentials, naming the headers a page sends", async () => {
    const preflight = await send(`${server.baseUrl}/tools/call`, {
      method: "OPTIONS",
      headers: {
        Origin: "http://inspector.test",
        "Access-Control-Request-Method": "POST",
        "Access-Control-Request-Headers": "content-type, oxp-api-key",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-origin")).toBe("http://inspector.test");
    expect(preflight.headers.get("access-control-allow-methods")).toContain("POST");
    expect(preflight.headers.get("access-control-allow-headers")).toMatch(/OXP-API-Key/);
    expect(preflight.headers.get("oxp-version")).toBe("1.0");
  });

  it("lets a page elsewhere use the extensions: their request headers, DELETE, and the answer headers", async () => {
    const preflight = await send(`${server.baseUrl}/tools/calls/x`, {
      method: "OPTIONS",
      headers: {
        Origin: "http://inspector.test",
        "Access-Control-Request-Method": "DELETE",
        "Access-Control-Request-Headers": "oxp-extensions, prefer, last-event-id",
      },
    });
    expect(preflight.status).toBe(204);
    expect(preflight.headers.get("access-control-allow-methods")).toContain("DELETE");
    for (const header of ["OXP-Extensions", "Prefer", "Last-Event-ID"]) {
      expect(preflight.headers.get("access-control-allow-headers")).toContain(header);
    }
    const list = await send(`${server.baseUrl}/tools`, {
      headers: {
        Origin: "http://inspector.test",
        "OXP-API-Key": "cors-key-0123456789",
        "OXP-Extensions": "annotations",
      },
    });
    for (const header of ["OXP-Extensions", "Location", "Preference-Applied"]) {
      expect(list.headers.get("access-control-expose-headers")).toContain(header);
    }
  });

  it("lets an allowed origin read answers and their OXP headers; others get no grant", async () => {
    const allowed = await send(`${server.baseUrl}/tools`, {
      headers: { Origin: "http://inspector.test", "OXP-API-Key": "cors-key-0123456789" },
    });
    expect(allowed.status).toBe(200);
    expect(allowed.headers.get("access-control-allow-origin")).toBe("http://inspector.test");
    expect(allowed.headers.get("access-control-expose-headers")).toMatch(/OXP-Version/);
    // The list varies by encoding too; that must not replace CORS's Vary: Origin (a cache would mix origins).
    expect(allowed.headers.get("vary")).toMatch(/Origin/);
    expect(allowed.headers.get("vary")).toMatch(/Accept-Encoding/);
    const revalidated = await send(`${server.baseUrl}/tools`, {
      headers: {
        Origin: "http://inspector.test",
        "OXP-API-Key": "cors-key-0123456789",
        "If-None-Match": allowed.headers.get("etag") as string,
      },
    });
    expect(revalidated.status).toBe(304);
    expect(revalidated.headers.get("vary")).toMatch(/Origin/);
    expect(revalidated.headers.get("vary")).toMatch(/Accept-Encoding/);
    const unauthorized = await send(`${server.baseUrl}/tools`, { headers: { Origin: "http://inspector.test" } });
    expectError(unauthorized, 401);
    expect(unauthorized.headers.get("access-control-allow-origin")).toBe("http://inspector.test");

    const other = await send(`${server.baseUrl}/tools`, {
      headers: { Origin: "http://elsewhere.test", "OXP-API-Key": "cors-key-0123456789" },
    });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
  });

  verifies(
    "endpoints.error-json",
    "is off by default: no grant, and OPTIONS is a method the routes do not take",
    async () => {
      const reply = await send(`${closed.baseUrl}/tools`, { headers: { Origin: "http://inspector.test" } });
      expect(reply.headers.get("access-control-allow-origin")).toBeNull();
      const preflight = await send(`${closed.baseUrl}/tools/call`, {
        method: "OPTIONS",
        headers: { Origin: "http://inspector.test", "Access-Control-Request-Method": "POST" },
      });
      expectError(preflight, 405);
    },
  );
});

describe("JWTs verified once", () => {
  let server: Running;
  // The server's clock, moved by the test: a token's exp passes without waiting for it.
  const clock = new ManualClock(Date.now());
  beforeAll(async () => {
    server = await startServer({ auth: { jwt: { secret: SECRET } }, clock });
  });
  afterAll(() => server.close());

  verifies(
    "auth.jwt-claims",
    "still refuses a remembered token once its exp (plus the tolerance) has passed",
    async () => {
      // Inside the 60 s tolerance for 3 s more.
      const exp = Math.floor(clock.now() / 1000) - 57;
      const token = await new SignJWT({ exp, sub: "agent" })
        .setProtectedHeader({ alg: "HS256" })
        .sign(new TextEncoder().encode(SECRET));
      const headers = { Authorization: `Bearer ${token}` };
      expect((await send(`${server.baseUrl}/tools`, { headers })).status).toBe(200);
      clock.skip(2_000);
      expect((await send(`${server.baseUrl}/tools`, { headers })).status).toBe(200);
      clock.skip(1_100);
      expectError(await send(`${server.baseUrl}/tools`, { headers }), 401);
    },
  );

  verifies(
    "auth.jwt-hs256-only",
    "never admits a token that differs from a remembered one, even in its signature alone",
    async () => {
      const token = await new SignJWT({ exp: Math.floor(Date.now() / 1000) + 300, sub: "agent" })
        .setProtectedHeader({ alg: "HS256" })
        .sign(new TextEncoder().encode(SECRET));
      expect((await send(`${server.baseUrl}/tools`, { headers: { Authorization: `Bearer ${token}` } })).status).toBe(
        200,
      );
      const forged = `${token.slice(0, -4)}${token.endsWith("AAAA") ? "BBBB" : "AAAA"}`;
      expectError(await send(`${server.baseUrl}/tools`, { headers: { Authorization: `Bearer ${forged}` } }), 401);
    },
  );
});

/** An idempotency store whose every operation fails while `down` is set, as a shared store does when unreachable. */
class FlakyIdempotencyStore implements IdempotencyStore {
  down = false;
  private readonly inner = new MemoryIdempotencyStore();
  private check() {
    if (this.down) {
      throw new Error("connect ECONNREFUSED 127.0.0.1:6379");
    }
  }
  async claim(key: IdempotencyKey, fingerprint: string, ttlMs: number) {
    this.check();
    return this.inner.claim(key, fingerprint, ttlMs);
  }
  async complete(
    key: IdempotencyKey,
    entry: Required<Pick<IdempotencyEntry, "fingerprint" | "response">>,
    ttl: number,
  ) {
    this.check();
    return this.inner.complete(key, entry, ttl);
  }
  async abandon(key: IdempotencyKey, fingerprint: string, ttlMs: number) {
    this.check();
    return this.inner.abandon(key, fingerprint, ttlMs);
  }
  async release(key: IdempotencyKey) {
    this.check();
    return this.inner.release(key);
  }
  async get(key: IdempotencyKey) {
    this.check();
    return this.inner.get(key);
  }
  async waitFor(key: IdempotencyKey, fingerprint: string, maxMs: number) {
    this.check();
    return this.inner.waitFor(key, fingerprint, maxMs);
  }
}

/** A token store that fails while `down` is set. */
class FlakyTokenStore extends MemoryTokenStore {
  down = false;
  override async get(owner: TokenOwner, providerId: string): Promise<StoredToken | undefined> {
    if (this.down) {
      throw new Error("connect ECONNREFUSED 127.0.0.1:6379");
    }
    return super.get(owner, providerId);
  }
}

describe("shared state that cannot answer", () => {
  const store = new FlakyIdempotencyStore();
  const tokens = new FlakyTokenStore();
  let server: Running;
  beforeAll(async () => {
    server = await startServer({ idempotencyStore: store, taskStore: new InProcessTaskStore(), tokenStore: tokens });
  });
  afterAll(() => server.close());
  afterEach(() => {
    store.down = false;
    tokens.down = false;
  });

  verifies(
    "idempotency.shared-store",
    "answers 503 with Retry-After, logs the fault without a stack in the answer, and recovers",
    async () => {
      store.down = true;
      const reply = await callTool(server.baseUrl, {
        tool_id: "Calculator.Add",
        call_id: "c-1",
        input: { a: 1, b: 2 },
      });
      expectError(reply, 503);
      expect(reply.headers.get("retry-after")).toBe("1");
      expect(reply.text).not.toContain("ECONNREFUSED");
      expect(server.logs().some((line) => line.level === 50 && JSON.stringify(line).includes("ECONNREFUSED"))).toBe(
        true,
      );

      store.down = false;
      const again = await callTool(server.baseUrl, {
        tool_id: "Calculator.Add",
        call_id: "c-1",
        input: { a: 1, b: 2 },
      });
      expect(again.status).toBe(200);
      expect(again.body).toMatchObject({ success: true, value: 3, call_id: "c-1" });
    },
  );

  it("answers 503 when the token store fails while requirements are resolved", async () => {
    tokens.down = true;
    const reply = await callTool(server.baseUrl, {
      tool_id: "Gmail.GetEmails",
      input: {},
      context: { user_id: "user-1" },
    });
    expectError(reply, 503);
    await expectHealthy(server.baseUrl);
  });
});

describe("the call observer", () => {
  let running: RunningServer;
  const events: CallEvent[] = [];
  let started = 0;
  const challenges: string[] = [];
  beforeAll(async () => {
    const app = makeServer({
      tools: testTools(),
      logger: false,
      observer: {
        callStarted: () => started++,
        callEnded: (event) => events.push(event),
        challengeStarted: (id) => challenges.push(id),
      },
    });
    running = await listen(app, { port: 0 });
  });
  afterAll(() => running.close());

  it("sees each call's resolved tool, outcome and status, never a requested string it could not resolve", async () => {
    await callTool(running.url, { tool_id: "Calculator.Add", input: { a: 1, b: 1 } });
    await callTool(running.url, { tool_id: "Calculator.Add", input: { a: "x" } });
    await callTool(running.url, { tool_id: "No.Such", input: {} });
    await callTool(running.url, { tool_id: "Calculator.Add", call_id: "o-1", input: { a: 1, b: 1 } });
    await callTool(running.url, { tool_id: "Calculator.Add", call_id: "o-1", input: { a: 1, b: 1 } });
    expect(started).toBe(5);
    expect(events.map(({ toolId, outcome, status }) => [toolId, outcome, status])).toEqual([
      ["Calculator.Add@1.0.0", "success", 200],
      ["Calculator.Add@1.0.0", "rejected", 422],
      [undefined, "rejected", 400],
      ["Calculator.Add@1.0.0", "success", 200],
      ["Calculator.Add@1.0.0", "replayed", 200],
    ]);
    expect(events.every((event) => event.durationMs >= 0)).toBe(true);
  });
});

describe("what both adapters judge the same way", () => {
  const API_KEY = "same-way-key-0123456789";
  let server: Running;
  let ended = 0;
  beforeAll(async () => {
    server = await startServer({
      auth: { apiKeys: [API_KEY] },
      observer: {
        callStarted: () => {
          throw new Error("an observer bug");
        },
        callEnded: () => {
          ended++;
          throw new Error("an observer bug");
        },
      },
      pages: [
        // A page that would answer a protocol route: it must never get the chance.
        async (request: Request) => {
          const { pathname } = new URL(request.url);
          if (pathname === "/tools") {
            return new Response("shadowed");
          }
          if (pathname === "/async-failure") {
            throw new Error("an async page bug at /secret/x.ts:1");
          }
          return undefined;
        },
      ],
    });
  });
  afterAll(() => server.close());
  const key = { "OXP-API-Key": API_KEY };

  verifies(
    "auth.guards-all-but-health",
    "guards every protocol route, a page notwithstanding, and /health/ with its slash stays open",
    async () => {
      expectError(await send(`${server.baseUrl}/tools`), 401);
      expect((await send(`${server.baseUrl}/tools`, { headers: key })).body.items.length).toBeGreaterThan(0);
      expect((await send(`${server.baseUrl}/health/`)).status).toBe(200);
      // A malformed challenge id is judged after authentication.
      expectError(await send(`${server.baseUrl}/authorization/challenges/%ZZ`), 401);
      expectError(await send(`${server.baseUrl}/authorization/challenges/%ZZ`, { headers: key }), 400);
    },
  );

  verifies("endpoints.error-json", "answers an async page's failure in JSON without its text", async () => {
    const reply = await send(`${server.baseUrl}/async-failure`);
    expectError(reply, 500);
    expect(reply.text).not.toContain("secret");
    await expectHealthy(server.baseUrl, key);
  });

  verifies(
    "call.body-checks",
    "refuses compressed bodies, other charsets and a declared length past the limit before reading",
    async () => {
      const body = JSON.stringify({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } });
      const gzip = await callTool(server.baseUrl, body, { ...key, "Content-Encoding": "gzip" });
      expectError(gzip, 415);
      const utf16 = await send(`${server.baseUrl}/tools/call`, {
        method: "POST",
        headers: { ...key, "content-type": "application/json; charset=utf-16le" },
        body: Buffer.from(body, "utf16le"),
      });
      expectError(utf16, 415);
      const utf8 = await callTool(server.baseUrl, body, { ...key, "content-type": "application/json; charset=UTF-8" });
      expect(utf8.body).toMatchObject({ success: true, value: 3 });

      const { port } = new URL(server.baseUrl);
      const started = performance.now();
      const huge = await receive(
        Number(port),
        Buffer.from(
          `POST /tools/call HTTP/1.1\r\nHost: localhost\r\nOXP-API-Key: ${API_KEY}\r\nContent-Type: application/json\r\nContent-Length: 99999999999\r\n\r\n{`,
        ),
        false,
      );
      expect(huge.status).toBe(413);
      expect(performance.now() - started).toBeLessThan(5_000);
    },
  );

  verifies(
    "endpoints.unknown-route",
    "routes an absolute-form target by its path as sent, without resolving dot segments",
    async () => {
      const { port } = new URL(server.baseUrl);
      const ask = (target: string) =>
        receive(
          Number(port),
          Buffer.from(
            `GET ${target} HTTP/1.1\r\nHost: localhost\r\nOXP-API-Key: ${API_KEY}\r\nConnection: close\r\n\r\n`,
          ),
          false,
        );
      expect((await ask(`http://127.0.0.1:${port}/tools`)).status).toBe(200);
      // A fetch host resolves the target into a URL before the handler sees it: `/a/../tools` reaches it as `/tools`.
      expect((await ask(`http://127.0.0.1:${port}/a/../tools`)).status).toBe(ADAPTER === "fetch" ? 200 : 404);
    },
  );

  it("keeps answering calls when an observer throws, and tells it of each call once", async () => {
    const before = ended;
    const reply = await callTool(
      server.baseUrl,
      { tool_id: "Calculator.Add", call_id: "observer-1", input: { a: 1, b: 2 } },
      key,
    );
    expect(reply.body).toMatchObject({ success: true, value: 3 });
    expectError(await callTool(server.baseUrl, { tool_id: "Calculator.Add", input: {} }, key), 422);
    expect(ended - before).toBe(2);
  });
});
