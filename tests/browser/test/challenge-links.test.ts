/** The Inspector in Chromium against a server whose challenges point elsewhere: check_url on another origin is not polled, a non-http url is not opened. */
import { createServer as createHttpServer, type IncomingHttpHeaders, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { inspector } from "@otc/inspector";
import { type AuthorizationProvider, createServer, defineTool, listen } from "@otc/server";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { field, launchBrowser, screenshot, watchPolicy } from "./harness.js";

const API_KEY = "challenge-links-key-7d1e90";

/** A provider whose challenges send the user to a `javascript:` URL; they never complete. */
const sneaky: AuthorizationProvider = {
  id: "sneaky",
  startChallenge: async () => ({ url: "javascript:document.title='pwned'" }),
  checkChallenge: async () => "pending",
};

const fetchNotes = defineTool({
  toolkit: "Notes",
  name: "Fetch",
  version: "1.0.0",
  description: "Fetches the user's notes, once they authorized the sneaky provider.",
  // Read-only, so the Inspector calls it without asking first (it asks before a tool that may be destructive).
  annotations: { read_only: true },
  inputSchema: {
    type: "object",
    properties: { query: { type: "string", description: "What to look for." } },
    additionalProperties: false,
  },
  outputSchema: {
    type: "object",
    properties: { notes: { type: "array", items: { type: "string" }, description: "The notes." } },
  },
  requirements: { user_id: true, authorization: [{ id: "sneaky" }] },
  run: () => ({ notes: [] }),
});

let browser: Awaited<ReturnType<typeof launchBrowser>>;
/** Serves the page and records every other request: where the tool server's check_url points. */
let elsewhere: { url: string; server: Server; requests: { url: string; headers: IncomingHttpHeaders }[] };
let tools: { url: string; close(): Promise<void> };

beforeAll(async () => {
  const handler = inspector();
  const requests: { url: string; headers: IncomingHttpHeaders }[] = [];
  const server = createHttpServer((req, res) => {
    if (/^\/(inspector|docs)(\/|$|\?)/.test(req.url ?? "")) {
      return handler(req, res);
    }
    requests.push({ url: req.url ?? "", headers: req.headers });
    res.writeHead(200, { "Content-Type": "application/json" });
    res.end(JSON.stringify({ status: "pending" }));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  elsewhere = { url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`, server, requests };
  // publicUrl makes the tool server write check_url on the page's origin, which its policy lets it call.
  const app = createServer({
    tools: [fetchNotes],
    logger: false,
    auth: { apiKeys: [API_KEY] },
    cors: { origins: [elsewhere.url] },
    publicUrl: elsewhere.url,
    authorizationProviders: [sneaky],
  });
  [browser, tools] = await Promise.all([launchBrowser(), listen(app, { port: 0 })]);
});

afterAll(async () => {
  await Promise.all([
    browser?.close(),
    tools?.close(),
    elsewhere && new Promise((resolve) => elsewhere.server.close(resolve)),
  ]);
});

describe("a challenge that points away from the server", () => {
  test("is not polled with the server's API key, and its javascript: url is not opened", async () => {
    const page = await browser.context.newPage();
    const violations = watchPolicy(page);
    await page.goto(`${elsewhere.url}/inspector?url=${encodeURIComponent(tools.url)}`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    await page.getByLabel("API key").fill(API_KEY);
    await page.getByRole("button", { name: "Connect" }).click();
    await page
      .getByRole("status")
      .filter({ hasText: `Connected to ${tools.url}` })
      .waitFor();
    await page.getByRole("button", { name: "Notes.Fetch@1.0.0", exact: true }).click();
    await page.getByLabel("User id").fill("ann");
    await field(page, "query").fill("x");
    await page.getByRole("button", { name: "Call tool" }).click();

    const result = page.getByRole("region", { name: "Result" });
    await result.getByText("Authorization required").waitFor();
    const challenge = result.getByRole("list", { name: "Authorization challenges" }).getByRole("listitem");
    expect(await challenge.textContent()).toContain("javascript:document.title");
    await challenge.getByText("Not an http(s) URL: not opened").waitFor();
    expect(await challenge.getByRole("button", { name: "Open authorization page" }).count()).toBe(0);
    const status = page.getByRole("status", { name: "Authorization status" });
    expect(await status.textContent()).toMatch(new RegExp(`check_url is not on ${tools.url}: not polled`));
    // Nothing to poll: the retry is left to the user, as for a challenge without check_url.
    expect(await result.getByRole("button", { name: "Retry call" }).isEnabled()).toBe(true);
    await page.waitForLoadState("networkidle");
    await screenshot(page, "10-challenge-elsewhere");

    // The page's own origin got the page and nothing with the key; the tool server got every request that had it.
    expect(elsewhere.requests.filter((request) => JSON.stringify(request.headers).includes(API_KEY))).toEqual([]);
    expect(elsewhere.requests).toEqual([]);
    expect(await page.title()).toBe("OXP Inspector");
    expect(violations).toEqual([]);
    await page.close();
  });
});
