// The demo consent page (docs/protocol.md section 4): anti-CSRF token, framing and cache headers, bounded and expiring challenges (the cost of starting one: consent-page.slow.test.ts).
import { MemoryTokenStore, type StartChallengeInput, type TokenOwner, WireError } from "@otc/server";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { DemoGoogleProvider } from "../src/google-provider.js";
import { callTool, expectError, type Reply, type Running, send, startDemo } from "./harness.js";

let server: Running;
beforeAll(async () => {
  server = await startDemo();
});
afterAll(() => server.close());

interface Challenge {
  id: string;
  url: string;
  check_url: string;
}

/** Calls Gmail.GetEmails for a user with no token: the server answers with a challenge. */
async function challengeFor(userId: string): Promise<Challenge> {
  const reply = await callTool(server.baseUrl, { tool_id: "Gmail.GetEmails", input: {}, context: { user_id: userId } });
  expectError(reply, 400);
  const [challenge] = reply.body.missing_requirements.authorization;
  return challenge;
}

/** The anti-CSRF token in the consent page's form. */
async function csrfOf(url: string): Promise<string> {
  const page = await send(url);
  const found = /<input type="hidden" name="csrf" value="([^"]+)">/.exec(page.text);
  if (!found?.[1]) {
    throw new Error(`no csrf input in ${page.text}`);
  }
  return found[1];
}

/** Submits the consent form with the given fields, as a browser would (no redirect followed). */
const submit = (url: string, fields: Record<string, string>, headers: Record<string, string> = {}) =>
  send(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded", ...headers },
    body: new URLSearchParams(fields).toString(),
    redirect: "manual",
  });

const statusOf = async (challenge: Challenge) => (await send(challenge.check_url)).body?.status;

function expectSecurityHeaders(reply: Reply): void {
  expect(reply.headers.get("x-frame-options")).toBe("DENY");
  const csp = reply.headers.get("content-security-policy") ?? "";
  expect(csp).toContain("frame-ancestors 'none'");
  expect(csp).toContain("default-src 'none'");
  expect(csp).toContain("form-action 'self'");
  expect(reply.headers.get("cache-control")).toBe("no-store");
  expect(reply.headers.get("referrer-policy")).toBe("no-referrer");
}

const expectNoStack = (reply: Reply) => expect(reply.text).not.toMatch(/\n\s+at |node_modules|\/work\/|\.ts:\d+/);

describe("the consent form", () => {
  verifies(
    "requirements.consent-page-safe",
    "shows the request with a hidden anti-CSRF token and the framing and cache headers",
    async () => {
      const challenge = await challengeFor("<b>ann</b>");
      expect(challenge.url).toBe(`${server.baseUrl}/demo/authorize/${encodeURIComponent(challenge.id)}`);
      const page = await send(challenge.url);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expectSecurityHeaders(page);
      expect(page.text).toContain("Google");
      expect(page.text).toContain("https://www.googleapis.com/auth/gmail.readonly");
      expect(page.text).toContain("&lt;b&gt;ann&lt;/b&gt;");
      expect(page.text).not.toContain("<b>ann</b>");
      expect(Buffer.from(await csrfOf(challenge.url), "base64url")).toHaveLength(32);
    },
  );

  verifies(
    "requirements.consent-page-safe",
    "refuses a POST without the token or with a wrong one, and decides nothing",
    async () => {
      const challenge = await challengeFor("bea");
      const csrf = await csrfOf(challenge.url);

      const missing = await submit(challenge.url, { action: "approve" });
      expect(missing.status).toBe(403);
      expect(missing.headers.get("content-type")).toMatch(/^text\/html/);
      expectSecurityHeaders(missing);
      expectNoStack(missing);
      expect(await statusOf(challenge)).toBe("pending");

      // What a form on another site can send: it cannot read the page, so it has no token.
      const crossSite = await submit(
        challenge.url,
        { action: "approve", csrf: "" },
        { origin: "https://attacker.example", referer: "https://attacker.example/" },
      );
      expect(crossSite.status).toBe(403);

      for (const wrong of [`${csrf.slice(0, -1)}${csrf.endsWith("A") ? "B" : "A"}`, "x", `${csrf}${csrf}`]) {
        expect((await submit(challenge.url, { action: "approve", csrf: wrong })).status).toBe(403);
      }
      expect(await statusOf(challenge)).toBe("pending");
      expect((await send(challenge.url)).text).toContain('name="csrf"');
    },
  );

  verifies("requirements.consent-page-safe", "does not take another challenge's token", async () => {
    const first = await challengeFor("cid");
    const second = await challengeFor("cid");
    const secondCsrf = await csrfOf(second.url);
    expect(secondCsrf).not.toBe(await csrfOf(first.url));
    expect((await submit(first.url, { action: "approve", csrf: secondCsrf })).status).toBe(403);
    expect(await statusOf(first)).toBe("pending");
  });

  it("completes the challenge with the right token: a 303 to the page, then completed", async () => {
    const challenge = await challengeFor("dan");
    const csrf = await csrfOf(challenge.url);
    const approved = await submit(challenge.url, { action: "approve", csrf });
    expect(approved.status).toBe(303);
    // Relative, so that it holds below any prefix the server is mounted under: it resolves to the page itself.
    const location = new URL(approved.headers.get("location") ?? "", challenge.url);
    expect(location.href).toBe(new URL(`/demo/authorize/${encodeURIComponent(challenge.id)}`, challenge.url).href);
    expectSecurityHeaders(approved);
    expect(await statusOf(challenge)).toBe("completed");

    const page = await send(challenge.url);
    expect(page.status).toBe(200);
    expectSecurityHeaders(page);
    expect(page.text).toContain("approved");
    expect(page.text).not.toContain("<form");

    const retried = await callTool(server.baseUrl, {
      tool_id: "Gmail.GetEmails",
      input: {},
      context: { user_id: "dan" },
    });
    expect(retried.status, retried.text).toBe(200);
  });

  it("refuses an action other than approve or deny with a plain page", async () => {
    const challenge = await challengeFor("eve");
    const reply = await submit(challenge.url, { action: "maybe", csrf: await csrfOf(challenge.url) });
    expect(reply.status).toBe(400);
    expect(reply.headers.get("content-type")).toMatch(/^text\/html/);
    expectSecurityHeaders(reply);
    expect(await statusOf(challenge)).toBe("pending");
  });

  verifies(
    "requirements.consent-page-safe",
    "answers an unknown challenge with a plain 404 page carrying the headers",
    async () => {
      for (const reply of [
        await send(`${server.baseUrl}/demo/authorize/google.nope`),
        await submit(`${server.baseUrl}/demo/authorize/google.nope`, { action: "approve", csrf: "x" }),
      ]) {
        expect(reply.status).toBe(404);
        expect(reply.headers.get("content-type")).toMatch(/^text\/html/);
        expectSecurityHeaders(reply);
        expectNoStack(reply);
      }
    },
  );
});

describe("pending challenges per user", () => {
  verifies(
    "requirements.consent-challenges-bounded",
    "drop the same user's oldest beyond 5, and leave other users alone",
    async () => {
      const other = await challengeFor("fay");
      const mine: Challenge[] = [];
      for (let i = 0; i < 6; i++) {
        mine.push(await challengeFor("gus"));
      }
      const [oldest, ...rest] = mine;
      if (!oldest) {
        throw new Error("no challenge");
      }
      expectError(await send(oldest.check_url), 404);
      const page = await send(oldest.url);
      expect(page.status).toBe(404);
      expectSecurityHeaders(page);
      for (const challenge of rest) {
        expect(await statusOf(challenge)).toBe("pending");
      }
      expect(await statusOf(other)).toBe("pending");
    },
  );
});

describe("DemoGoogleProvider bounds", () => {
  const tokens = new MemoryTokenStore();
  let next = 0;
  const input = (owner: TokenOwner): StartChallengeInput => ({
    challengeId: `google.test-${next++}`,
    owner,
    scopes: ["s"],
    baseUrl: "http://demo.test",
    tokens,
  });
  const ann = { principal: "anonymous", userId: "ann" };

  verifies(
    "requirements.consent-challenges-bounded",
    "keys the per-user cap on principal and user id, and does not count decided challenges",
    async () => {
      const provider = new DemoGoogleProvider({ maxPendingPerUser: 2 });
      const a1 = input({ principal: "a", userId: "u" });
      const a2 = input({ principal: "a", userId: "u" });
      const b1 = input({ principal: "b", userId: "u" });
      for (const started of [a1, a2, b1]) {
        await provider.startChallenge(started);
      }
      expect(await provider.decide(a1.challengeId, true)).toBe("completed");
      expect(await tokens.get(a1.owner, "google")).toMatchObject({ scopes: ["s"] });
      expect(await tokens.get(b1.owner, "google")).toBeUndefined();
      // a1 is decided: a's pending are a2 and a3, nothing dropped.
      const a3 = input({ principal: "a", userId: "u" });
      await provider.startChallenge(a3);
      expect(await provider.checkChallenge(a1.challengeId)).toBe("completed");
      expect(await provider.checkChallenge(a2.challengeId)).toBe("pending");
      // One more for a drops a2, its oldest pending; b's stays.
      await provider.startChallenge(input({ principal: "a", userId: "u" }));
      expect(await provider.checkChallenge(a2.challengeId)).toBeUndefined();
      expect(await provider.checkChallenge(a3.challengeId)).toBe("pending");
      expect(await provider.checkChallenge(b1.challengeId)).toBe("pending");
      expect(provider.size).toBe(4);
    },
  );

  verifies(
    ["requirements.consent-challenges-bounded", "limits.bounded-resources"],
    "refuses a challenge beyond the total with a 503 and a Retry-After, decided ones included",
    async () => {
      let now = 1_000_000;
      const provider = new DemoGoogleProvider({ maxChallenges: 3, ttlMs: 60_000, now: () => now });
      const first = input(ann);
      await provider.startChallenge(first);
      now += 10_000;
      await provider.startChallenge(input({ principal: "anonymous", userId: "bob" }));
      await provider.startChallenge(input({ principal: "anonymous", userId: "cy" }));
      await provider.decide(first.challengeId, false);
      now += 10_500;
      const refused = await provider.startChallenge(input({ principal: "anonymous", userId: "dee" })).catch((e) => e);
      expect(refused).toBeInstanceOf(WireError);
      expect(refused.status).toBe(503);
      expect(refused.message).toBe("Too many authorization requests are pending");
      expect(refused.details.headers).toEqual({ "Retry-After": "40" });
      expect(provider.size).toBe(3);

      now += 39_499;
      const soon = await provider.startChallenge(input({ principal: "anonymous", userId: "dee" })).catch((e) => e);
      expect(soon.details.headers).toEqual({ "Retry-After": "1" });

      // Once the oldest expires there is room again.
      now += 1;
      await expect(provider.startChallenge(input({ principal: "anonymous", userId: "dee" }))).resolves.toMatchObject({
        url: expect.stringContaining("/demo/authorize/google.test-"),
      });
      expect(await provider.checkChallenge(first.challengeId)).toBeUndefined();
      expect(provider.size).toBe(3);
    },
  );

  it("lets a user at the cap replace their oldest even when the total is full", async () => {
    const provider = new DemoGoogleProvider({ maxChallenges: 2, maxPendingPerUser: 2 });
    const [one, two, three] = [input(ann), input(ann), input(ann)];
    for (const started of [one, two, three]) {
      if (started) {
        await provider.startChallenge(started);
      }
    }
    expect(await provider.checkChallenge(one?.challengeId ?? "")).toBeUndefined();
    expect(provider.size).toBe(2);
  });

  verifies(
    "requirements.consent-challenges-bounded",
    "expires challenges, pending or decided, after the ttl",
    async () => {
      let now = 1_000_000;
      const provider = new DemoGoogleProvider({ ttlMs: 20, now: () => now });
      const pending = input(ann);
      const decided = input({ principal: "anonymous", userId: "bob" });
      await provider.startChallenge(pending);
      await provider.startChallenge(decided);
      await provider.decide(decided.challengeId, true);
      // Held for the ttl, gone once it has passed.
      now += 19;
      expect(provider.size).toBe(2);
      now += 1;
      expect(await provider.checkChallenge(pending.challengeId)).toBeUndefined();
      expect(await provider.checkChallenge(decided.challengeId)).toBeUndefined();
      expect(await provider.decide(pending.challengeId, true)).toBeUndefined();
      expect(provider.size).toBe(0);
    },
  );

  it("rejects options that are not positive integers", () => {
    expect(() => new DemoGoogleProvider({ ttlMs: 0 })).toThrow(/ttlMs/);
    expect(() => new DemoGoogleProvider({ maxPendingPerUser: 1.5 })).toThrow(/maxPendingPerUser/);
    expect(() => new DemoGoogleProvider({ maxChallenges: -1 })).toThrow(/maxChallenges/);
    expect(() => new DemoGoogleProvider({ maxChallengesPerPrincipal: 0 })).toThrow(/maxChallengesPerPrincipal/);
  });
});
