// docs/protocol.md 7 for `pages` beside the protocol routes: served without server authentication, and their errors are JSON with OXP-Version, without stack traces.
import { verifies } from "@otc/test-helpers/verifies";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { expectError, type Running, send, startServer } from "./harness.js";

/** A page like an authorization provider's consent page: GET shows it, POST takes a small form, and one route throws. */
function page(): express.Router {
  const router = express.Router({ caseSensitive: true });
  router.get("/page/:id", (req, res) => {
    res.type("html").send(`<p>${req.params.id.length} characters</p>`);
  });
  router.post("/page/:id", express.urlencoded({ extended: false, limit: "1kb" }), (req, res) => {
    res.redirect(303, `${req.baseUrl}/page/${encodeURIComponent(req.params.id)}`);
  });
  router.get("/broken", () => {
    throw new Error("kaboom at /srv/app/secret.ts:12");
  });
  return router;
}

let server: Running;
beforeAll(async () => {
  server = await startServer({ auth: { apiKeys: ["pages-test-key"] }, nodePages: [page()] });
});
afterAll(() => server.close());

describe("pages beside the protocol routes", () => {
  verifies(
    ["endpoints.oxp-version-header", "auth.guards-all-but-health"],
    "are served without server authentication, with OXP-Version on their answers and redirects",
    async () => {
      const shown = await send(`${server.baseUrl}/page/x`);
      expect(shown.status).toBe(200);
      expect(shown.headers.get("oxp-version")).toBe("1.0");
      const redirect = await send(`${server.baseUrl}/page/x`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: "action=approve",
        redirect: "manual",
      });
      expect(redirect.status).toBe(303);
      expect(redirect.headers.get("oxp-version")).toBe("1.0");
      expectError(await send(`${server.baseUrl}/tools`), 401);
    },
  );

  it.each<[string, string, RequestInit, number]>([
    ["a malformed percent-encoding", "/page/%ZZ", {}, 400],
    [
      "a form over 1 KB",
      "/page/x",
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `action=${"a".repeat(2_000)}`,
      },
      413,
    ],
    [
      "Content-Encoding: bogus",
      "/page/x",
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded", "content-encoding": "bogus" },
        body: "action=approve",
      },
      415,
    ],
    [
      "charset=utf-16",
      "/page/x",
      {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-16" },
        body: "action=approve",
      },
      415,
    ],
  ])("answer %s with a %i JSON error", async (_case, path, init, status) => {
    const reply = await send(`${server.baseUrl}${path}`, init);
    expectError(reply, status);
    expect(reply.text).not.toMatch(/URIError|decodeParam|node_modules/);
  });

  verifies(
    "endpoints.error-json",
    "answer an exception with a 500 JSON error that says nothing of it, and log it",
    async () => {
      const reply = await send(`${server.baseUrl}/broken`);
      expectError(reply, 500);
      expect(reply.body).toEqual({ message: "Internal server error" });
      expect(reply.text).not.toContain("kaboom");
      expect(server.logs().find((line) => line.msg === "Internal server error")).toMatchObject({ path: "/broken" });
    },
  );
});
