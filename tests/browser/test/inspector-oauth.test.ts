/** The Inspector's Sign in and Connections panel in Chromium (docs/protocol.md 9.6, 9.7): a real @otc/server whose oauth extension trusts a real oidc-provider, signed in through the provider's pages; a pasted bearer token; an account connected in a new tab, then disconnected; the access token renewed with the refresh token once the page's clock says it is about to expire; the authorization server chosen where the server names two. */
import { inspectorPage, readInspectorFiles } from "@otc/inspector";
import { createServer, defineTool, listen } from "@otc/server";
import { freePort } from "@otc/test-helpers/free-port";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import type { Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, test } from "vitest";
import { launchBrowser, screenshot, watchPolicy } from "./harness.js";

const USER = { id: "alice", password: "alice-password", email: "alice@example.com" };
/** The host application's session cookie: the browser that finishes a connection flow shows its user with it. */
const SESSION = "inspector_session";

/** Says who the server ran it for: under oauth, the access token's subject. */
const whoAmI = defineTool({
  toolkit: "Account",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Answers the user the call was run for.",
  inputSchema: { type: "object", properties: {}, additionalProperties: false },
  outputSchema: { type: "object", properties: { user: { type: "string" } }, required: ["user"] },
  requirements: { user_id: true },
  // Read-only: the page asks before calling a tool that may be destructive, and this test is not about that.
  annotations: { read_only: true },
  run: (_input, context) => ({ user: context.userId as string }),
});

let browser: Awaited<ReturnType<typeof launchBrowser>>;
let provider: AuthorizationServer;
let server: { url: string; close(): Promise<void> };

beforeAll(async () => {
  // The provider registers the Inspector's redirect URI, on the server's origin: the port is chosen first.
  const port = await freePort();
  const url = `http://127.0.0.1:${port}`;
  provider = await startAuthorizationServer({
    resources: [{ url, scopes: ["oxp:tools:read", "oxp:tools:call"] }],
    clients: [
      // The Inspector: a public client whose redirect URI is the page itself (its origin is let through CORS).
      { clientId: "oxp-inspector", redirectUris: [`${url}/inspector`] },
      // The server's vault, connecting users' accounts at the same provider.
      {
        clientId: "oxp-vault",
        clientSecret: "vault-secret",
        redirectUris: [`${url}/connections/callback`],
        grantTypes: ["authorization_code", "refresh_token"],
      },
    ],
    users: [USER],
  });
  const app = createServer({
    tools: [whoAmI],
    logger: false,
    validateResponses: true,
    publicUrl: url,
    pages: [inspectorPage({ files: readInspectorFiles })],
    auth: { oauth: { authorizationServers: [provider.issuer] } },
    connections: {
      providers: [
        {
          id: "example",
          name: "Example Accounts",
          issuer: provider.issuer,
          clientId: "oxp-vault",
          clientSecret: "vault-secret",
          scopes: ["openid", "email"],
        },
      ],
      keys: [{ id: "k1", key: Buffer.alloc(32, 7).toString("base64url") }],
      verifyBrowser: (request, owner) => (request.headers.get("cookie") ?? "").includes(`${SESSION}=${owner.userId}`),
    },
  });
  [browser, server] = await Promise.all([launchBrowser(), listen(app, { port })]);
});

afterAll(async () => {
  await Promise.all([browser?.close(), server?.close()]);
  await provider?.stop();
});

/** On the provider's pages: signs in when it asks, then allows what the consent page asks for. */
async function consent(page: Page): Promise<void> {
  await page.locator("#submit").waitFor();
  if ((await page.locator("#login").count()) > 0) {
    await page.locator("#login").fill(USER.id);
    await page.locator("#password").fill(USER.password);
    await page.locator("#submit").click();
    await page.locator("#scopes").waitFor();
  }
  await page.locator("#submit").click();
}

const connectedStatus = (page: Page) => page.getByRole("status").filter({ hasText: "Connected to" });
const signInStatus = (page: Page) => page.getByRole("status", { name: "Sign-in status" });

/** Clicks Sign in, and on `as`'s pages signs in or only consents (a session there from an earlier test), back signed in. */
async function signInThrough(page: Page, as: AuthorizationServer): Promise<void> {
  await page.getByRole("button", { name: "Sign in" }).click();
  const signedIn = signInStatus(page).filter({ hasText: "Signed in at" });
  // The provider's pages (#submit on each), or straight back when it remembers the user and the consent.
  await page.locator("#submit").or(signedIn).waitFor();
  if (new URL(page.url()).origin === as.issuer) {
    await consent(page);
  }
  await signedIn.waitFor();
  await connectedStatus(page).waitFor();
}

/** Calls Account.WhoAmI from the page and answers the value shown. */
async function callWhoAmI(page: Page): Promise<unknown> {
  await page.getByRole("button", { name: "Account.WhoAmI@1.0.0" }).click();
  await page.getByRole("button", { name: "Call tool" }).click();
  await page.getByText("Success", { exact: true }).waitFor();
  return JSON.parse((await page.getByRole("region", { name: "Value" }).textContent()) ?? "null");
}

describe("the Inspector against a server with oauth and connections", () => {
  test("without credentials it says so, and offers Sign in and the client id to register", async () => {
    const page = await browser.context.newPage();
    const violations = watchPolicy(page);
    await page.goto(`${server.url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    const signIn = page.getByRole("region", { name: "Sign in" });
    expect(await signIn.getByLabel("Client id").inputValue()).toBe("oxp-inspector");
    expect(await signIn.locator(".redirect-uri").textContent()).toBe(`${server.url}/inspector`);
    expect(await page.getByRole("status", { name: "Sign-in status" }).textContent()).toBe("Not signed in");
    expect(await page.getByText(/for local demos only/).count()).toBe(1);
    expect(violations).toEqual([]);
    await page.close();
  });

  test("signs in at the provider, comes back signed in, lists the tools and calls one as the user", async () => {
    const page = await browser.context.newPage();
    const violations = watchPolicy(page);
    provider.clearRequests();
    await page.goto(`${server.url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    await page.getByRole("button", { name: "Sign in" }).click();

    // The page reloads once to be let call the provider, then goes to its login page.
    await page.locator("#login").waitFor();
    expect(new URL(page.url()).origin).toBe(provider.issuer);
    expect(await page.locator("#client").textContent()).toBe("oxp-inspector");
    await screenshot(page, "inspector-oauth-login");
    await consent(page);

    // Back on the page: the code exchanged, the address clean, the tools listed with the token.
    await page.getByRole("status", { name: "Sign-in status" }).filter({ hasText: "Signed in at" }).waitFor();
    await connectedStatus(page).waitFor();
    expect(await connectedStatus(page).textContent()).toContain("1 tool");
    const address = new URL(page.url());
    expect([...address.searchParams.keys()]).toEqual(["auth"]);
    expect(address.searchParams.get("auth")).toBe(provider.issuer);
    expect(await page.evaluate(() => window.sessionStorage.length)).toBe(0);
    expect(provider.count("token", "authorization_code")).toBe(1);
    expect(provider.count("authorization")).toBeGreaterThanOrEqual(1);

    expect(await callWhoAmI(page)).toEqual({ user: USER.id });
    // The history masks the access token the call carried.
    const history = page.getByRole("list", { name: "Calls" });
    await history.getByText("Account.WhoAmI@1.0.0", { exact: true }).click();
    const raw = (await history.getByLabel("Raw request").first().textContent()) ?? "";
    expect(raw).toContain("authorization: Bearer ••••••");
    expect(raw).not.toMatch(/eyJ[\w-]{20,}/);
    await screenshot(page, "inspector-oauth-signed-in");

    // Sign out drops the token: the server asks for credentials again.
    await page.getByRole("button", { name: "Sign out" }).click();
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    expect(await page.getByRole("status", { name: "Sign-in status" }).textContent()).toBe("Not signed in");
    expect(violations).toEqual([]);
    await page.close();
  });

  test("a pasted bearer token is sent as the access token", async () => {
    const token = await provider.mintAccessToken({ sub: "bob", scope: "oxp:tools:read oxp:tools:call" });
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    await page.getByLabel("Bearer token").fill(token);
    await page.getByRole("button", { name: "Connect", exact: true }).click();
    await connectedStatus(page).waitFor();
    expect(await callWhoAmI(page)).toEqual({ user: "bob" });

    // A token without oxp:tools:call lists the tools but cannot call them: the server's 403 is shown.
    const readOnly = await provider.mintAccessToken({ sub: "bob", scope: "oxp:tools:read" });
    await page.getByLabel("Bearer token").fill(readOnly);
    await page.getByRole("button", { name: "Connect", exact: true }).click();
    await connectedStatus(page).waitFor();
    await page.getByRole("button", { name: "Account.WhoAmI@1.0.0" }).click();
    await page.getByRole("button", { name: "Call tool" }).click();
    // In the result (the Sign in panel's help names the scopes too): the server's 403, naming the scope missing.
    await page
      .locator("main")
      .getByText(/oxp:tools:call/)
      .first()
      .waitFor();
    expect(await page.locator("main").getByText("Success", { exact: true }).count()).toBe(0);
    await page.close();
  });

  test("connects an account in a new tab, sees it listed, and disconnects it", async () => {
    await browser.context.addCookies([{ name: SESSION, value: USER.id, url: server.url }]);
    const page = await browser.context.newPage();
    await page.goto(`${server.url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    await page.getByRole("button", { name: "Sign in" }).click();
    // Signed in at the provider already (the last test's session): its consent page, or straight back.
    await page.waitForURL((url) => url.origin === provider.issuer || url.href.startsWith(`${server.url}/inspector`));
    if (new URL(page.url()).origin === provider.issuer) {
      await consent(page);
    }
    await page.getByRole("status", { name: "Sign-in status" }).filter({ hasText: "Signed in at" }).waitFor();
    await connectedStatus(page).waitFor();

    const panel = page.getByRole("region", { name: "Connections" });
    await panel.getByText("No connections yet.").waitFor();
    const opened = browser.context.waitForEvent("page");
    await panel.getByRole("button", { name: "Connect Example Accounts" }).click();
    const tab = await opened;
    await tab.waitForURL((url) => url.origin === provider.issuer);
    await consent(tab);
    await tab.waitForURL(new RegExp(`^${server.url}/connections/callback`));

    await panel.getByRole("status", { name: "Connection flow status" }).filter({ hasText: "completed" }).waitFor();
    const row = panel.getByRole("row").filter({ hasText: "Example Accounts" });
    await row.waitFor();
    expect(await row.textContent()).toContain("active");
    await screenshot(page, "inspector-oauth-connections");

    await row.getByRole("button", { name: "Disconnect" }).click();
    await panel.getByText("No connections yet.").waitFor();
    await tab.close();
    await page.close();
  });

  // Last of this describe: the page's clock is the browser context's, and stays installed (running as the wall clock
  // does, ahead by the jump) for the pages after it.
  test("renews the access token with the refresh token once the page's clock says it is about to expire", async () => {
    await browser.context.clock.install();
    const page = await browser.context.newPage();
    const violations = watchPolicy(page);
    await page.goto(`${server.url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    await signInThrough(page, provider);
    expect(await callWhoAmI(page)).toEqual({ user: USER.id });
    provider.clearRequests();

    // The provider's access tokens live 300 s: five minutes later the page renews before it sends (the server, on
    // the wall clock, would still take the old one: the renewal is the page's own doing).
    await page.clock.fastForward("05:00");
    await page.getByRole("button", { name: "Call tool" }).click();
    const calls = page.getByRole("list", { name: "Calls" }).getByRole("listitem");
    await calls.nth(1).waitFor();
    // The newest call first: it succeeded, as the user, with the renewed token.
    expect(await calls.first().locator(".summary").textContent()).toBe("success");
    expect(JSON.parse((await page.getByRole("region", { name: "Value" }).textContent()) ?? "null")).toEqual({
      user: USER.id,
    });
    expect(provider.count("token", "refresh_token")).toBe(1);
    expect(provider.requests.find((request) => request.endpoint === "token")?.status).toBe(200);
    await signInStatus(page).filter({ hasText: "renewed with the refresh token once" }).waitFor();
    // Neither token reaches the history, nor sessionStorage.
    const history = (await page.getByRole("list", { name: "Calls" }).textContent()) ?? "";
    expect(history).not.toMatch(/eyJ[\w-]{20,}/);
    expect(await page.evaluate(() => window.sessionStorage.length)).toBe(0);
    expect(violations).toEqual([]);
    await page.close();
  });
});

describe("the Inspector against a server that names two authorization servers", () => {
  let other: AuthorizationServer;
  let twoIssuers: { url: string; close(): Promise<void> };

  beforeAll(async () => {
    const port = await freePort();
    const url = `http://127.0.0.1:${port}`;
    other = await startAuthorizationServer({
      resources: [{ url, scopes: ["oxp:tools:read", "oxp:tools:call"] }],
      clients: [{ clientId: "oxp-inspector", redirectUris: [`${url}/inspector`] }],
      users: [USER],
    });
    const app = createServer({
      tools: [whoAmI],
      logger: false,
      validateResponses: true,
      publicUrl: url,
      pages: [inspectorPage({ files: readInspectorFiles })],
      auth: { oauth: { authorizationServers: [provider.issuer, other.issuer] } },
    });
    twoIssuers = await listen(app, { port });
  });

  afterAll(async () => {
    await twoIssuers?.close();
    await other?.stop();
  });

  test("offers both, the first by default; signs in at the one chosen and remembers it for the session", async () => {
    const page = await browser.context.newPage();
    const violations = watchPolicy(page);
    provider.clearRequests();
    await page.goto(`${twoIssuers.url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    const choice = page.getByRole("region", { name: "Sign in" }).getByLabel("Authorization server");
    await choice.waitFor();
    expect(await choice.locator("option").allTextContents()).toEqual([provider.issuer, other.issuer]);
    expect(await choice.inputValue()).toBe(provider.issuer);

    await choice.selectOption(other.issuer);
    await page.getByRole("button", { name: "Sign in" }).click();
    // The reload to be let call it keeps the choice: the login page is the second server's.
    await page.locator("#login").waitFor();
    expect(new URL(page.url()).origin).toBe(other.issuer);
    await consent(page);
    await signInStatus(page)
      .filter({ hasText: `Signed in at ${other.issuer}` })
      .waitFor();
    await connectedStatus(page).waitFor();
    expect(await callWhoAmI(page)).toEqual({ user: USER.id });
    expect(other.count("token", "authorization_code")).toBe(1);
    expect(provider.count("authorization")).toBe(0);
    expect(provider.count("token")).toBe(0);
    // sessionStorage keeps the choice (an issuer), no token.
    const stored = await page.evaluate(() => ({ ...window.sessionStorage }));
    expect(stored).toEqual({
      "oxp-inspector.authorization-servers": JSON.stringify({ [twoIssuers.url]: other.issuer }),
    });

    // Opened again in the same session: the choice stands.
    await page.goto(`${twoIssuers.url}/inspector`);
    await page.getByRole("status").filter({ hasText: "Authentication failed" }).waitFor();
    await page.getByRole("region", { name: "Sign in" }).getByLabel("Authorization server").waitFor();
    expect(await page.getByLabel("Authorization server").inputValue()).toBe(other.issuer);
    expect(violations).toEqual([]);
    await page.close();
  });
});
