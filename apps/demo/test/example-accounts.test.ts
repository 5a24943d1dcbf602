// The demo with Example Accounts: its metadata, its registration policy, otc login against it, the demo's sign-in, a connection bound to the signed-in browser, Example.Profile reading the connected account, and Gmail's google served by the vault (no consent page of the demo's).
import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import path from "node:path";
import { loginCommand, run } from "@otc/cli";
import { listen } from "@otc/server";
import { freePort } from "@otc/test-helpers/free-port";
import { codeChallengeOf, completeAuthorization, createCodeVerifier } from "@otc/test-helpers/oidc-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createExampleAccounts, type ExampleAccounts, GOOGLE_CLIENT_ID, OTC_CLIENT_ID } from "../src/accounts.js";
import { createDemoApp } from "../src/app.js";
import { createDemoHandler } from "../src/handler.js";
import { GMAIL_READONLY_SCOPE } from "../src/tools.js";
import { ADAPTER } from "./harness.js";

const API_KEY = "example-accounts-key-51c0";

let url: string;
let accounts: ExampleAccounts;
let close: () => Promise<void>;

beforeAll(async () => {
  // The issuer and the resource are the public URL, known before the server listens.
  const port = await freePort();
  url = `http://127.0.0.1:${port}`;
  accounts = await createExampleAccounts({ publicUrl: url });
  const demo = (ADAPTER === "node" ? createDemoHandler : createDemoApp)({
    accounts,
    logger: false,
    validateResponses: true,
    auth: { apiKeys: [API_KEY] },
  });
  ({ close } = await listen(demo.app, { port }));
});

afterAll(() => close?.());

const user = () => ({ id: accounts.user.id, password: accounts.user.password });

/** An access token for the demo, for the demo user, through the pre-registered public client `otc`. */
async function accessToken(): Promise<string> {
  const codeVerifier = createCodeVerifier();
  const redirectUri = "http://127.0.0.1:9/callback";
  const authorization = new URL(accounts.endpoints.authorization);
  authorization.search = new URLSearchParams({
    response_type: "code",
    client_id: OTC_CLIENT_ID,
    redirect_uri: redirectUri,
    scope: "oxp:tools:read oxp:tools:call",
    resource: url,
    state: "s",
    code_challenge: codeChallengeOf(codeVerifier),
    code_challenge_method: "S256",
  }).toString();
  const { code } = await completeAuthorization(authorization.href, { user: user() });
  const response = await fetch(accounts.endpoints.token, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({
      grant_type: "authorization_code",
      code: code ?? "",
      redirect_uri: redirectUri,
      code_verifier: codeVerifier,
      client_id: OTC_CLIENT_ID,
      resource: url,
    }),
  });
  expect(response.status).toBe(200);
  return ((await response.json()) as { access_token: string }).access_token;
}

/** Signs in at /demo/signin as the demo user: the session cookie the demo sets. */
async function signIn(): Promise<string> {
  const start = await fetch(`${url}/demo/signin`, { redirect: "manual" });
  expect(start.status).toBe(303);
  const flowCookie = (start.headers.get("set-cookie") ?? "").split(";")[0] as string;
  const { redirectUrl } = await completeAuthorization(start.headers.get("location") as string, { user: user() });
  const back = await fetch(redirectUrl, { headers: { cookie: flowCookie } });
  expect(back.status).toBe(200);
  expect(await back.text()).toContain('<strong id="user">demo</strong>');
  const session = back.headers.getSetCookie().find((line) => line.startsWith("demo_session="));
  expect(session).toMatch(/HttpOnly; SameSite=Lax/);
  return (session as string).split(";")[0] as string;
}

/** Starts a connection to Example Accounts (as `provider`, `example` by default) for the token's user; the provider's page. */
async function startConnection(token: string, provider = "example"): Promise<string> {
  const response = await fetch(`${url}/connections`, {
    method: "POST",
    headers: {
      authorization: `Bearer ${token}`,
      "content-type": "application/json",
      "OXP-Extensions": "connections",
    },
    body: JSON.stringify({ provider }),
  });
  expect(response.status).toBe(201);
  return ((await response.json()) as { url: string }).url;
}

const callTool = (token: string, toolId: string, input: Record<string, unknown>) =>
  fetch(`${url}/tools/call`, {
    method: "POST",
    headers: { authorization: `Bearer ${token}`, "content-type": "application/json" },
    body: JSON.stringify({ tool_id: toolId, input }),
  });
const callProfile = (token: string) => callTool(token, "Example.Profile", {});

/**
 * Opens `start` at Example Accounts as a browser would, signing in when it asks: the consent page's HTML (not
 * answered). The cookie jar keeps every cookie by name and sends it everywhere: oidc-provider reads only its own.
 */
async function consentPageOf(start: string): Promise<string> {
  const jar = new Map<string, string>();
  let next = new URL(start);
  let init: RequestInit = {};
  for (let step = 0; step < 12; step++) {
    const cookie = [...jar].map(([name, value]) => `${name}=${value}`).join("; ");
    const response = await fetch(next, {
      ...init,
      redirect: "manual",
      headers: { ...(init.headers as Record<string, string>), cookie },
    });
    for (const line of response.headers.getSetCookie()) {
      const pair = line.split(";")[0] as string;
      const [name, value] = [pair.slice(0, pair.indexOf("=")), pair.slice(pair.indexOf("=") + 1)];
      if (value === "" || /expires=Thu, 01 Jan 1970/i.test(line)) {
        jar.delete(name);
      } else {
        jar.set(name, value);
      }
    }
    const location = response.headers.get("location");
    if (location) {
      await response.body?.cancel();
      next = new URL(location, next);
      init = {};
      continue;
    }
    const html = await response.text();
    const login = /<form id="login-form" method="post" action="([^"]+)"/.exec(html)?.[1];
    if (!login) {
      return html;
    }
    next = new URL(login.replaceAll("&#38;", "&"), next);
    init = {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded" },
      body: new URLSearchParams({ login: accounts.user.id, password: accounts.user.password }),
    };
  }
  throw new Error(`${start} did not reach a consent page`);
}

describe("Example Accounts in the demo", () => {
  it("is the authorization server the demo's resource metadata names, its metadata at both well-known places", async () => {
    const resource = await (await fetch(`${url}/.well-known/oauth-protected-resource`)).json();
    expect(resource).toMatchObject({ resource: url, authorization_servers: [`${url}/accounts`] });
    for (const where of [
      "/accounts/.well-known/openid-configuration",
      "/.well-known/oauth-authorization-server/accounts",
    ]) {
      const metadata = (await (await fetch(`${url}${where}`)).json()) as Record<string, unknown>;
      expect(metadata).toMatchObject({
        issuer: `${url}/accounts`,
        token_endpoint: `${url}/accounts/token`,
        registration_endpoint: `${url}/accounts/reg`,
        code_challenge_methods_supported: ["S256"],
      });
    }
    const discovery = (await (await fetch(`${url}/.well-known/oxp`)).json()) as { extensions: string[] };
    expect(discovery.extensions).toEqual(expect.arrayContaining(["oauth", "connections"]));
  });

  it.each([
    ["a confidential client", 400, { token_endpoint_auth_method: "client_secret_basic", application_type: "native" }],
    ["a web client", 400, { token_endpoint_auth_method: "none", application_type: "web" }],
    [
      "a redirect off the loopback",
      400,
      { token_endpoint_auth_method: "none", application_type: "native", redirect_uris: ["https://evil.example/cb"] },
    ],
    [
      "a client asking for the Gmail scope",
      400,
      { token_endpoint_auth_method: "none", application_type: "native", scope: `openid ${GMAIL_READONLY_SCOPE}` },
    ],
    [
      "a public native client, loopback redirect",
      201,
      { token_endpoint_auth_method: "none", application_type: "native" },
    ],
  ])("answers the registration of %s with %i", async (_name, status, metadata) => {
    const response = await fetch(`${url}/accounts/reg`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ redirect_uris: ["http://127.0.0.1/callback"], response_types: ["code"], ...metadata }),
    });
    expect(response.status).toBe(status);
  });

  it("signs otc login in (dynamic registration, PKCE, the demo as resource), and its token calls the demo", async () => {
    const dir = await mkdtemp(path.join(tmpdir(), "otc-demo-login-"));
    try {
      const out: string[] = [];
      const io = { stdout: (text: string) => out.push(text), stderr: () => {}, env: { OTC_CONFIG_DIR: dir } };
      let browser: Promise<unknown> = Promise.resolve();
      // The "browser": signs in and consents over HTTP, then lands on otc's loopback listener (not awaited here:
      // otc answers that request once it holds the tokens).
      const openUrl = async (authorizationUrl: string) => {
        browser = completeAuthorization(authorizationUrl, { user: user() }).then(({ redirectUrl }) =>
          fetch(redirectUrl),
        );
      };
      expect(await loginCommand([url, "--timeout-seconds", "60"], io, { openUrl })).toBe(0);
      await browser;
      expect(out.join("")).toContain(`Signed in to ${url} at ${url}/accounts`);
      out.length = 0;
      expect(await run(["call", "Calculator.Add", "--input", '{"a": 1, "b": 2}', "--url", url], io)).toBe(0);
      expect(out.join("")).toContain("3");
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });

  it("connects the account only in the browser signed in as the flow's user; Example.Profile then reads it", async () => {
    const token = await accessToken();
    // Not connected yet: the call answers the authorization challenge, whose link is Example Accounts'.
    const before = await callProfile(token);
    expect(before.status).toBe(400);
    expect(JSON.stringify(await before.json())).toContain(`${url}/accounts/auth`);

    // A browser without the demo's session (or with a forged one) finishes nothing.
    for (const cookie of [undefined, "demo_session=eyJ1c2VyIjoiZGVtbyJ9.forged"]) {
      const { redirectUrl } = await completeAuthorization(await startConnection(token), { user: user() });
      expect(redirectUrl.startsWith(`${url}/connections/callback?`)).toBe(true);
      const refused = await fetch(redirectUrl, cookie ? { headers: { cookie } } : {});
      expect(refused.status).toBe(403);
    }

    const session = await signIn();
    const { redirectUrl } = await completeAuthorization(await startConnection(token), { user: user() });
    const connected = await fetch(redirectUrl, { headers: { cookie: session } });
    expect(connected.status).toBe(200);
    expect(await connected.text()).toContain("Example Accounts is connected");

    const list = await fetch(`${url}/connections`, {
      headers: { authorization: `Bearer ${token}`, "OXP-Extensions": "connections" },
    });
    expect(((await list.json()) as { items: unknown[] }).items).toEqual([
      expect.objectContaining({ provider: "example", status: "active", account: "demo" }),
    ]);
    const after = await callProfile(token);
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({
      success: true,
      value: { sub: "demo", name: "Demo User", email: "demo@example.com" },
    });
  });

  it("serves Gmail's google through the vault: its challenge is Example Accounts' consent to the Gmail scope, then the call runs", async () => {
    const token = await accessToken();
    const gmail = () => callTool(token, "Gmail.GetEmails", { query: "receipt" });
    // Not connected yet: the vault's challenge, whose link is Example Accounts' authorization for the google client.
    const before = await gmail();
    expect(before.status).toBe(400);
    const body = (await before.json()) as {
      missing_requirements: { authorization: { id: string; url: string; check_url: string }[] };
    };
    const [challenge] = body.missing_requirements.authorization;
    if (!challenge) {
      throw new Error(`no challenge in ${JSON.stringify(body)}`);
    }
    expect(challenge.id).toMatch(/^google\./);
    const link = new URL(challenge.url);
    expect(`${link.origin}${link.pathname}`).toBe(`${url}/accounts/auth`);
    expect(Object.fromEntries(link.searchParams)).toMatchObject({
      client_id: GOOGLE_CLIENT_ID,
      scope: GMAIL_READONLY_SCOPE,
      redirect_uri: `${url}/connections/callback`,
      code_challenge_method: "S256",
    });

    // Example Accounts' consent page names the client and the Gmail scope.
    const consent = await consentPageOf(challenge.url);
    expect(consent).toContain(`<strong id="client">${GOOGLE_CLIENT_ID}</strong>`);
    expect(/<ul id="scopes">(.*?)<\/ul>/.exec(consent)?.[1]).toBe(`<li>${GMAIL_READONLY_SCOPE}</li>`);

    // The browser signed in to the demo finishes the flow; the challenge is then completed.
    const session = await signIn();
    const { redirectUrl } = await completeAuthorization(challenge.url, { user: user() });
    const connected = await fetch(redirectUrl, { headers: { cookie: session } });
    expect(connected.status).toBe(200);
    expect(await connected.text()).toContain("Google (Example Accounts) is connected");
    const checked = await fetch(challenge.check_url, { headers: { authorization: `Bearer ${token}` } });
    expect(await checked.json()).toEqual({ status: "completed" });
    const list = await fetch(`${url}/connections`, {
      headers: { authorization: `Bearer ${token}`, "OXP-Extensions": "connections" },
    });
    expect(((await list.json()) as { items: unknown[] }).items).toContainEqual(
      expect.objectContaining({ provider: "google", status: "active", scopes: [GMAIL_READONLY_SCOPE] }),
    );

    // The same call now runs, with the token the vault holds.
    const after = await gmail();
    expect(after.status).toBe(200);
    expect(await after.json()).toMatchObject({
      success: true,
      value: { emails: [{ id: "email_2", subject: "Your Receipt" }] },
    });
  });

  it("connects google from POST /connections too, with its default scopes: openid names the account", async () => {
    const token = await accessToken();
    const page = await startConnection(token, "google");
    expect(new URL(page).searchParams.get("scope")).toBe(`openid email ${GMAIL_READONLY_SCOPE}`);
    const session = await signIn();
    const { redirectUrl } = await completeAuthorization(page, { user: user() });
    const connected = await fetch(redirectUrl, { headers: { cookie: session } });
    expect(connected.status).toBe(200);
    const list = await fetch(`${url}/connections`, {
      headers: { authorization: `Bearer ${token}`, "OXP-Extensions": "connections" },
    });
    expect(((await list.json()) as { items: unknown[] }).items).toContainEqual(
      expect.objectContaining({
        provider: "google",
        status: "active",
        account: "demo",
        scopes: expect.arrayContaining(["openid", "email", GMAIL_READONLY_SCOPE]),
      }),
    );
  });

  it("does not serve the demo's hand-made consent page at /demo/authorize", async () => {
    const token = await accessToken();
    // A fresh user (API key): the call's challenge is the vault's, and no consent page of the demo's knows its id.
    const challenged = await fetch(`${url}/tools/call`, {
      method: "POST",
      headers: { "OXP-API-Key": API_KEY, "content-type": "application/json" },
      body: JSON.stringify({ tool_id: "Gmail.GetEmails", input: {}, context: { user_id: "no-page" } }),
    });
    expect(challenged.status).toBe(400);
    const { missing_requirements } = (await challenged.json()) as {
      missing_requirements: { authorization: { id: string; url: string }[] };
    };
    const id = missing_requirements.authorization[0]?.id as string;
    expect(missing_requirements.authorization[0]?.url.startsWith(`${url}/accounts/auth?`)).toBe(true);
    for (const [path, method] of [
      [`/demo/authorize/${encodeURIComponent(id)}`, "GET"],
      ["/demo/authorize/google.x", "GET"],
      ["/demo/authorize/google.x", "PUT"],
    ] as const) {
      // With a credential: a path the server does not serve is a 401 before it is a 404 while OAuth is on.
      const answer = await fetch(`${url}${path}`, { method, headers: { authorization: `Bearer ${token}` } });
      expect([path, method, answer.status]).toEqual([path, method, 404]);
      // The server's own not_found, not a consent page.
      expect(answer.headers.get("content-type")).toMatch(/^application\/json/);
      await answer.body?.cancel();
    }
  });

  it("grants the Gmail scope to the vault's google client alone", async () => {
    const authorization = new URL(accounts.endpoints.authorization);
    authorization.search = new URLSearchParams({
      response_type: "code",
      client_id: OTC_CLIENT_ID,
      redirect_uri: "http://127.0.0.1:9/callback",
      scope: GMAIL_READONLY_SCOPE,
      state: "s",
      code_challenge: codeChallengeOf(createCodeVerifier()),
      code_challenge_method: "S256",
    }).toString();
    const answer = await fetch(authorization, { redirect: "manual" });
    const location = new URL(answer.headers.get("location") as string);
    expect(`${location.origin}${location.pathname}`).toBe("http://127.0.0.1:9/callback");
    expect(location.searchParams.get("error")).toBe("invalid_scope");
  });

  it("keeps its login page out of frames and refuses a login form posted from another site", async () => {
    const start = await fetch(`${url}/demo/signin`, { redirect: "manual" });
    const jar: string[] = [];
    let next = new URL(start.headers.get("location") as string);
    let response = await fetch(next, { redirect: "manual" });
    // Follow to the login page, keeping oidc-provider's interaction cookie.
    while (response.status === 303 || response.status === 302) {
      jar.push(...response.headers.getSetCookie().map((line) => line.split(";")[0] as string));
      next = new URL(response.headers.get("location") as string, next);
      response = await fetch(next, { redirect: "manual", headers: { cookie: jar.join("; ") } });
    }
    expect(response.headers.get("x-frame-options")).toBe("DENY");
    expect(response.headers.get("content-security-policy")).toContain("frame-ancestors 'none'");
    const action = /<form id="login-form" method="post" action="([^"]+)"/.exec(await response.text())?.[1] as string;
    const posted = await fetch(new URL(action, next), {
      method: "POST",
      redirect: "manual",
      headers: {
        cookie: jar.join("; "),
        origin: "https://evil.example",
        "content-type": "application/x-www-form-urlencoded",
      },
      body: new URLSearchParams({ login: "demo", password: accounts.user.password }),
    });
    expect(posted.status).toBe(403);
  });
});
