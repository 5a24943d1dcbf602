// The demo consent page as a fetch page (DemoGoogleProvider.page()), called with Request objects, no server: the same answers as its Express router.
import {
  type ChallengeStore,
  MemoryChallengeStore,
  MemoryTokenStore,
  type TokenOwner,
  WireError,
} from "@otc/server/fetch";
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect, it } from "vitest";
import { createDemoFetchHandler } from "../src/fetch.js";
import { DemoGoogleProvider } from "../src/google-provider.js";
import { GMAIL_READONLY_SCOPE } from "../src/tools.js";

const BASE_URL = "http://127.0.0.1:1234";

/** A provider with its page and a token store, and a way to start challenges on it. */
function setup(options: { challengeStore?: ChallengeStore } = {}) {
  const tokens = new MemoryTokenStore();
  const provider = new DemoGoogleProvider({ ...options, tokenStore: tokens });
  const page = provider.page();
  let next = 0;
  /** Starts a challenge for `userId`; its consent page's URL, id and owner. */
  const start = async (userId: string) => {
    const owner: TokenOwner = { principal: "anonymous", userId };
    const challengeId = `google.fetch-${next++}`;
    const { url } = await provider.startChallenge({
      challengeId,
      owner,
      scopes: [GMAIL_READONLY_SCOPE],
      baseUrl: BASE_URL,
      tokens,
    });
    return { url, id: challengeId, owner };
  };
  /** The page's answer, which must not pass the request on. */
  const answer = async (request: Request) => {
    const response = await page(request);
    if (!response) {
      throw new Error(`the page passed on ${request.method} ${request.url}`);
    }
    return response;
  };
  return { provider, page, tokens, start, answer };
}

/** The consent form as a browser sends it. */
const post = (url: string, body: string, headers: Record<string, string> = {}) =>
  new Request(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body,
  });

const form = (fields: Record<string, string>) => new URLSearchParams(fields).toString();

/** The anti-CSRF token in a consent page's form. */
async function csrfOf(response: Response): Promise<string> {
  const text = await response.text();
  const found = /<input type="hidden" name="csrf" value="([^"]+)">/.exec(text);
  if (!found?.[1]) {
    throw new Error(`no csrf input in ${text}`);
  }
  return found[1];
}

function expectSecurityHeaders(response: Response): void {
  expect(response.headers.get("x-frame-options")).toBe("DENY");
  expect(response.headers.get("content-security-policy")).toBe(
    "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; frame-ancestors 'none'; base-uri 'none'",
  );
  expect(response.headers.get("cache-control")).toBe("no-store");
  expect(response.headers.get("referrer-policy")).toBe("no-referrer");
  expect(response.headers.get("x-content-type-options")).toBe("nosniff");
}

function expectHtml(response: Response, status: number): void {
  expect(response.status).toBe(status);
  expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
  expectSecurityHeaders(response);
}

const expectNoStack = (text: string) => expect(text).not.toMatch(/\n\s+at |node_modules|\/work\/|\.ts:\d+/);

/** What `answer` throws for the server to answer in JSON: a {@link WireError} of `status`, with the pages' headers. */
async function expectThrown(answered: Promise<Response>, status: number): Promise<WireError> {
  const thrown = await answered.then(
    (response) => response,
    (error: unknown) => error,
  );
  expect(thrown).toBeInstanceOf(WireError);
  const error = thrown as WireError;
  expect(error.status).toBe(status);
  expectSecurityHeaders(new Response(null, { headers: error.details.headers }));
  return error;
}

describe("the consent page as a fetch page", () => {
  verifies(
    "requirements.consent-page-safe",
    "shows the request with a hidden anti-CSRF token and the framing and cache headers",
    async () => {
      const { start, answer } = setup();
      const challenge = await start("<b>ann</b>");
      expect(challenge.url).toBe(`${BASE_URL}/demo/authorize/${challenge.id}`);
      const response = await answer(new Request(challenge.url));
      expectHtml(response, 200);
      const text = await response.clone().text();
      expect(response.headers.get("content-length")).toBe(String(new TextEncoder().encode(text).byteLength));
      expect(text).toContain("Google");
      expect(text).toContain(GMAIL_READONLY_SCOPE);
      expect(text).toContain("&lt;b&gt;ann&lt;/b&gt;");
      expect(text).not.toContain("<b>ann</b>");
      expect(Buffer.from(await csrfOf(response), "base64url")).toHaveLength(32);
    },
  );

  it("answers HEAD with the headers of GET and no body, a trailing slash as without", async () => {
    const { start, answer } = setup();
    const { url } = await start("ann");
    const get = await answer(new Request(url));
    const head = await answer(new Request(url, { method: "HEAD" }));
    expectHtml(head, 200);
    expect(head.headers.get("content-length")).toBe(get.headers.get("content-length"));
    expect(head.body).toBeNull();
    expect(await (await answer(new Request(`${url}/`))).text()).toContain('name="csrf"');
  });

  it("approves with the right token: a 303 back to the page, relative to the path asked for, then completed", async () => {
    const { start, answer, provider, tokens } = setup();
    const challenge = await start("dan");
    const csrf = await csrfOf(await answer(new Request(challenge.url)));
    const approved = await answer(post(challenge.url, form({ action: "approve", csrf })));
    expect(approved.status).toBe(303);
    expectSecurityHeaders(approved);
    expect(approved.headers.get("location")).toBe(`./${challenge.id}`);
    expect(new URL(approved.headers.get("location") ?? "", challenge.url).href).toBe(challenge.url);
    expect(await provider.checkChallenge(challenge.id)).toBe("completed");
    expect(await tokens.get(challenge.owner, "google")).toMatchObject({
      token: expect.stringMatching(/^demo-google-[0-9a-f]{24}$/),
      scopes: [GMAIL_READONLY_SCOPE],
    });

    const page = await answer(new Request(challenge.url));
    expectHtml(page, 200);
    const text = await page.text();
    expect(text).toContain("approved");
    expect(text).not.toContain("<form");
  });

  it("denies with the right token, and points a trailing-slash path back to the same page", async () => {
    const { start, answer, provider, tokens } = setup();
    const challenge = await start("dee");
    const csrf = await csrfOf(await answer(new Request(challenge.url)));
    const mounted = `${challenge.url}/`;
    const denied = await answer(post(mounted, form({ action: "deny", csrf })));
    expect(denied.status).toBe(303);
    expect(new URL(denied.headers.get("location") ?? "", mounted).href).toBe(challenge.url);
    expect(await provider.checkChallenge(challenge.id)).toBe("failed");
    expect(await tokens.get(challenge.owner, "google")).toBeUndefined();
    expect(await (await answer(new Request(challenge.url))).text()).toContain("denied");
  });

  it("points the redirect below the prefix the server is mounted under", async () => {
    const { start, answer } = setup();
    const challenge = await start("eli");
    const csrf = await csrfOf(await answer(new Request(challenge.url)));
    const approved = await answer(post(challenge.url, form({ action: "approve", csrf })));
    // The browser asked for /tenant/demo/authorize/<id>; the page saw the path below /tenant.
    const asked = `${BASE_URL}/tenant/demo/authorize/${challenge.id}`;
    expect(new URL(approved.headers.get("location") ?? "", asked).href).toBe(asked);
  });

  verifies(
    "requirements.consent-page-safe",
    "refuses a POST without the token, with a wrong one or another challenge's, and decides nothing",
    async () => {
      const { start, answer, provider } = setup();
      const challenge = await start("bea");
      const other = await start("bea");
      const csrf = await csrfOf(await answer(new Request(challenge.url)));
      const otherCsrf = await csrfOf(await answer(new Request(other.url)));
      expect(otherCsrf).not.toBe(csrf);
      for (const fields of [
        { action: "approve" } as Record<string, string>,
        { action: "approve", csrf: "" },
        { action: "approve", csrf: `${csrf.slice(0, -1)}${csrf.endsWith("A") ? "B" : "A"}` },
        { action: "approve", csrf: "x" },
        { action: "approve", csrf: `${csrf}${csrf}` },
        { action: "approve", csrf: otherCsrf },
      ]) {
        const refused = await answer(post(challenge.url, form(fields)));
        expectHtml(refused, 403);
        expectNoStack(await refused.text());
      }
      // Sent twice, the token counts as not sent, as Express's parser made it an array.
      expectHtml(await answer(post(challenge.url, `action=approve&csrf=${csrf}&csrf=${csrf}`)), 403);
      // Another type of body holds no fields.
      expectHtml(
        await answer(post(challenge.url, form({ action: "approve", csrf }), { "content-type": "text/plain" })),
        403,
      );
      expect(await provider.checkChallenge(challenge.id)).toBe("pending");
      expect(await (await answer(new Request(challenge.url))).text()).toContain('name="csrf"');
    },
  );

  it("refuses an action other than approve or deny with a plain 400 page", async () => {
    const { start, answer, provider } = setup();
    const challenge = await start("eve");
    const csrf = await csrfOf(await answer(new Request(challenge.url)));
    for (const body of [form({ action: "maybe", csrf }), form({ csrf }), `action=approve&action=deny&csrf=${csrf}`]) {
      const reply = await answer(post(challenge.url, body));
      expectHtml(reply, 400);
      expect(await reply.text()).toContain("Choose Approve or Deny");
    }
    expect(await provider.checkChallenge(challenge.id)).toBe("pending");
  });

  verifies(
    "requirements.consent-page-safe",
    "answers an unknown challenge with a plain 404 page carrying the headers",
    async () => {
      const { answer } = setup();
      const url = `${BASE_URL}/demo/authorize/google.nope`;
      for (const request of [
        new Request(url),
        new Request(url, { method: "HEAD" }),
        post(url, form({ action: "approve" })),
      ]) {
        const reply = await answer(request);
        expectHtml(reply, 404);
        const text = await reply.text();
        if (request.method !== "HEAD") {
          expect(text).toContain("No such request");
        }
        expectNoStack(text);
      }
    },
  );

  it("refuses a body past 1 KiB with a 413, by its declared length or by what arrives", async () => {
    const { start, answer, provider } = setup();
    const challenge = await start("fay");
    const csrf = await csrfOf(await answer(new Request(challenge.url)));
    const big = form({ action: "approve", csrf, pad: "x".repeat(1024) });
    expect((await expectThrown(answer(post(challenge.url, big)), 413)).message).toBe("The request body is too large");
    // A stream of unknown length, cut off once past the limit.
    let pulled = 0;
    const endless = new ReadableStream<Uint8Array>({
      pull(controller) {
        pulled++;
        controller.enqueue(new TextEncoder().encode("x".repeat(256)));
      },
    });
    const streamed = new Request(challenge.url, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: endless,
      duplex: "half",
    } as RequestInit);
    await expectThrown(answer(streamed), 413);
    expect(pulled).toBeLessThan(10);
    // A body of exactly the limit is read.
    const exact = form({ action: "approve", csrf, pad: "" });
    const padded = `${exact}${"x".repeat(1024 - exact.length)}`;
    expect(padded).toHaveLength(1024);
    expect((await answer(post(challenge.url, padded))).status).toBe(303);
    expect(await provider.checkChallenge(challenge.id)).toBe("completed");
  });

  it("refuses a body in another charset or with a Content-Encoding with a 415", async () => {
    const { start, answer } = setup();
    const { url } = await start("gus");
    for (const headers of [
      { "content-type": "application/x-www-form-urlencoded; charset=latin2" } as Record<string, string>,
      { "content-encoding": "gzip" },
    ]) {
      await expectThrown(answer(post(url, "action=approve", headers)), 415);
    }
    // ISO-8859-1, which Express's parser took too, is read.
    expectHtml(
      await answer(
        post(url, "action=approve", { "content-type": "application/x-www-form-urlencoded; charset=ISO-8859-1" }),
      ),
      403,
    );
  });

  it("throws a failing store's error as the 503 the server answers in JSON, with Retry-After", async () => {
    const down = new Error("redis is down");
    const memory = new MemoryChallengeStore();
    /** The memory store, but for the methods listed in `failing`, which reject as a store that lost its server. */
    const failing = new Set<"get" | "decide">();
    const store: ChallengeStore = {
      add: (id, challenge) => memory.add(id, challenge),
      get: (id) => (failing.has("get") ? Promise.reject(down) : memory.get(id)),
      decide: (id, status) => (failing.has("decide") ? Promise.reject(down) : memory.decide(id, status)),
    };
    const { start, answer, provider } = setup({ challengeStore: store });
    const challenge = await start("hal");
    const csrf = await csrfOf(await answer(new Request(challenge.url)));
    failing.add("get");
    for (const request of [new Request(challenge.url), post(challenge.url, form({ action: "approve", csrf }))]) {
      const thrown = await expectThrown(answer(request), 503);
      expect(thrown).toMatchObject({ details: { headers: { "Retry-After": "1" } }, cause: down });
      expect(thrown.toBody()).toEqual({
        message: "The server's shared state is unavailable",
        developer_message: "The authorization request could not be read or decided; retry shortly.",
      });
    }
    failing.clear();
    failing.add("decide");
    expect((await expectThrown(answer(post(challenge.url, form({ action: "approve", csrf }))), 503)).cause).toBe(down);
    failing.clear();
    expect(await provider.checkChallenge(challenge.id)).toBe("pending");
  });

  it("throws a 400 for a path that is not valid percent-encoding", async () => {
    const { answer } = setup();
    const thrown = await expectThrown(answer(new Request(`${BASE_URL}/demo/authorize/%E0%A4%A`)), 400);
    expect(thrown.cause).toBeInstanceOf(URIError);
  });

  verifies("endpoints.unknown-route", "throws a 405 naming GET, HEAD and POST for another method", async () => {
    const { start, answer, provider } = setup();
    const { url, id } = await start("ivy");
    for (const method of ["PUT", "DELETE", "OPTIONS", "PATCH"]) {
      const thrown = await expectThrown(answer(new Request(url, { method })), 405);
      expect(thrown.details.headers?.Allow).toBe("GET, HEAD, POST");
      expect(thrown.toBody()).toMatchObject({ message: "This method is not allowed here" });
    }
    expect(await provider.checkChallenge(id)).toBe("pending");
  });

  it("passes on other paths", async () => {
    const { start, page } = setup();
    const { url } = await start("ivy");
    for (const request of [
      new Request(`${BASE_URL}/demo/authorize`),
      new Request(`${BASE_URL}/demo/authorize/`),
      new Request(`${BASE_URL}/demo/authorize//`),
      new Request(`${url}/more`),
      new Request(`${url}/more`, { method: "DELETE" }),
      new Request(url.replace("/demo/", "/Demo/")),
      new Request(`${BASE_URL}/tools`),
      new Request(`${BASE_URL}/tools`, { method: "PUT" }),
    ]) {
      expect(await page(request), `${request.method} ${request.url}`).toBeUndefined();
    }
  });

  it("reads the id from the path, percent-decoded, and ignores the query", async () => {
    const { start, answer } = setup();
    const { id } = await start("jo");
    const encoded = `${BASE_URL}/demo/authorize/${id.replace(".", "%2E")}?x=1`;
    expect(await (await answer(new Request(encoded))).text()).toContain('name="csrf"');
  });
});

describe("the consent page's errors, answered by the demo's fetch handler", () => {
  verifies(
    ["requirements.consent-page-safe", "endpoints.error-json", "endpoints.unknown-route"],
    "are JSON with OXP-Version and the headers of the pages: never framed, cached or sniffed",
    async () => {
      const { handler } = createDemoFetchHandler({ logger: false });
      const called = await handler(
        new Request(`${BASE_URL}/tools/call`, {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "kim" } }),
        }),
      );
      const { url } = ((await called.json()) as { missing_requirements: { authorization: [{ url: string }] } })
        .missing_requirements.authorization[0];
      expectHtml(await handler(new Request(url)), 200);
      const formType = { "content-type": "application/x-www-form-urlencoded" };
      for (const [status, request] of [
        [400, new Request(`${BASE_URL}/demo/authorize/%E0%A4%A`)],
        [405, new Request(url, { method: "PUT" })],
        [413, post(url, form({ action: "approve", pad: "x".repeat(2_000) }))],
        [415, post(url, "action=approve", { ...formType, "content-encoding": "gzip" })],
      ] as const) {
        const reply = await handler(request);
        expect(reply.status, `${request.method} ${request.url}`).toBe(status);
        expect(reply.headers.get("content-type")).toBe("application/json; charset=utf-8");
        expect(reply.headers.get("oxp-version")).toBe("1.0");
        expectSecurityHeaders(reply);
        const text = await reply.text();
        expect(JSON.parse(text)).toMatchObject({ message: expect.any(String) });
        expectNoStack(text);
      }
      expect((await handler(new Request(url, { method: "DELETE" }))).headers.get("allow")).toBe("GET, HEAD, POST");
    },
  );
});
