// Finding 4 of the hostile-client attacks, on the demo's consent pages: their errors are JSON with OXP-Version, without stack traces (the others: packages/server/test/hostile-clients.test.ts).
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { callTool, expectError, type Running, send, startDemo } from "./harness.js";

describe("finding 4: errors of the demo's own pages are JSON with OXP-Version, without stack traces", () => {
  let server: Running;
  beforeAll(async () => {
    server = await startDemo();
  });
  afterAll(() => server.close());

  it.each<[string, string, RequestInit, number]>([
    ["a malformed percent-encoding", "/demo/authorize/%ZZ", {}, 400],
    [
      "a consent form over 1 KB",
      "/demo/authorize/google.x",
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `action=${"a".repeat(2_000)}`,
      },
      413,
    ],
    [
      "Content-Encoding: bogus",
      "/demo/authorize/google.x",
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "content-encoding": "bogus" },
        body: "action=approve",
      },
      415,
    ],
    [
      "charset=utf-16",
      "/demo/authorize/google.x",
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-16" },
        body: "action=approve",
      },
      415,
    ],
    ["another method", "/demo/authorize/google.x", { method: "PUT" }, 405],
  ])("%s gets a %i JSON answer, with the consent pages' headers", async (_case, path, init, status) => {
    const reply = await send(`${server.baseUrl}${path}`, init);
    expectError(reply, status);
    expect(reply.text).not.toMatch(/URIError|decodeParam|node_modules/);
    expect(reply.headers.get("x-frame-options")).toBe("DENY");
    expect(reply.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    expect(reply.headers.get("cache-control")).toBe("no-store");
    expect(reply.headers.get("referrer-policy")).toBe("no-referrer");
    expect(reply.headers.get("x-content-type-options")).toBe("nosniff");
  });

  verifies(
    ["endpoints.oxp-version-header", "requirements.consent-page-safe"],
    "puts OXP-Version on the consent pages and their redirects",
    async () => {
      const challenged = await callTool(server.baseUrl, {
        tool_id: "Gmail.GetEmails",
        context: { user_id: "page-user" },
      });
      const { url } = challenged.body.missing_requirements.authorization[0];
      const page = await send(url);
      expect(page.status).toBe(200);
      expect(page.headers.get("oxp-version")).toBe("1.0");
      const csrf = /name="csrf" value="([^"]*)"/.exec(page.text)?.[1] ?? "";
      const redirect = await send(url, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `action=deny&csrf=${encodeURIComponent(csrf)}`,
        redirect: "manual",
      });
      expect(redirect.status).toBe(303);
      expect(redirect.headers.get("oxp-version")).toBe("1.0");
    },
  );
});
