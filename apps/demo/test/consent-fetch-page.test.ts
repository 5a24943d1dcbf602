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
    await expect(answer(post(challenge.url, big))).rejects.toMatchObject({
      status: 413,
      message: "The request body is too large",
    });
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
    await expect(answer(streamed)).rejects.toBeInstanceOf(WireError);
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
      await expect(answer(post(url, "action=approve", headers))).rejects.toMatchObject({ status: 415 });
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
      const thrown = await answer(request).catch((error: unknown) => error);
      expect(thrown).toBeInstanceOf(WireError);
      expect(thrown).toMatchObject({ status: 503, details: { headers: { "Retry-After": "1" } }, cause: down });
      expect((thrown as WireError).toBody()).toEqual({
        message: "The server's shared state is unavailable",
        developer_message: "The authorization request could not be read or decided; retry shortly.",
      });
    }
    failing.clear();
    failing.add("decide");
    await expect(answer(post(challenge.url, form({ action: "approve", csrf })))).rejects.toMatchObject({
      status: 503,
      cause: down,
    });
    failing.clear();
    expect(await provider.checkChallenge(challenge.id)).toBe("pending");
  });

  it("throws a URIError, which the server answers with a 400, for a path that is not valid percent-encoding", async () => {
    const { answer } = setup();
    await expect(answer(new Request(`${BASE_URL}/demo/authorize/%E0%A4%A`))).rejects.toBeInstanceOf(URIError);
  });

  it("passes on other paths and other methods", async () => {
    const { start, page } = setup();
    const { url } = await start("ivy");
    for (const request of [
      new Request(url, { method: "PUT" }),
      new Request(url, { method: "DELETE" }),
      new Request(url, { method: "OPTIONS" }),
      new Request(`${BASE_URL}/demo/authorize`),
      new Request(`${BASE_URL}/demo/authorize/`),
      new Request(`${BASE_URL}/demo/authorize//`),
      new Request(`${url}/more`),
      new Request(url.replace("/demo/", "/Demo/")),
      new Request(`${BASE_URL}/tools`),
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
