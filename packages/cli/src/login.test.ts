// otc login and otc logout against a real Tool Server with the oauth extension and a real authorization server (oidc-provider on loopback): the sign-in, its file, the commands that use it, its refresh and its revocation.
import { type ChildProcessWithoutNullStreams, spawn } from "node:child_process";
import { mkdtemp, readFile, rm, stat, writeFile } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createServer, defineTool } from "@otc/server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import {
  type AuthorizationServer,
  completeAuthorization,
  startAuthorizationServer,
} from "@otc/test-helpers/oidc-provider";
import { afterAll, afterEach, beforeAll, beforeEach, describe, expect, it, onTestFinished } from "vitest";
import { run } from "./cli.js";
import { type CredentialsFile, credentialsLockPath, credentialsPath, type StoredSignIn } from "./credentials.js";
import { EXIT, type Io } from "./io.js";
import { type LoginRuntime, loginCommand } from "./login.js";
import { storedSignInProvider } from "./oauth-session.js";

const ALICE = { id: "alice", password: "wonderland" };
const CLIENT_ID = "otc-cli";
const API_KEY = "key-of-the-back-office";

const echo = defineTool({
  toolkit: "Echo",
  name: "Say",
  version: "1.0.0",
  description: "Says it back.",
  inputSchema: { type: "object", properties: { text: { type: "string", description: "What to say." } } },
  outputSchema: { type: "string" },
  run: ({ text }) => String(text ?? ""),
});

let as: AuthorizationServer;
let toolServer: Server;
/** The tool server's URL: also its canonical URL. */
let serverUrl: string;
/** That URL as the server's resource metadata names it (the `resource` its tokens are for). */
let resource: string;
let configDir: string;
let env: Record<string, string | undefined>;
/** Where a test may hold the tool server's requests: given each one first, it answers it or keeps it for later. */
let intercept: ((request: IncomingMessage, response: ServerResponse, pass: () => void) => void) | undefined;
/** The package's folder, where a spawned otc runs from its sources. */
const packageDir = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "..");

beforeAll(async () => {
  // The server's URL is its resource: the port is taken first, the app attached once the authorization server knows it.
  toolServer = createHttpServer();
  await new Promise<void>((resolve) => toolServer.listen(0, "127.0.0.1", resolve));
  serverUrl = `http://127.0.0.1:${(toolServer.address() as AddressInfo).port}`;
  as = await startAuthorizationServer({
    // Both spellings of the origin: the one the server's metadata names is the one otc asks for.
    resources: [
      { url: `${serverUrl}/`, scopes: ["oxp:tools:read", "oxp:tools:call"] },
      { url: serverUrl, scopes: ["oxp:tools:read", "oxp:tools:call"] },
    ],
    clients: [{ clientId: CLIENT_ID, redirectUris: ["http://127.0.0.1/callback"], applicationType: "native" }],
    users: [{ id: ALICE.id, password: ALICE.password }],
  });
  const app = createServer({
    tools: [echo],
    auth: { apiKeys: [API_KEY], oauth: { authorizationServers: [as.issuer], resource: serverUrl } },
  });
  toolServer.on("request", (request, response) => {
    const pass = () => app(request, response);
    if (intercept) {
      intercept(request, response, pass);
    } else {
      pass();
    }
  });
  resource = ((await (await fetch(`${serverUrl}/.well-known/oauth-protected-resource`)).json()) as { resource: string })
    .resource;
});

afterAll(async () => {
  toolServer?.closeAllConnections();
  await new Promise((resolve) => toolServer?.close(resolve));
  await as?.stop();
});

beforeEach(async () => {
  configDir = await mkdtemp(path.join(os.tmpdir(), "otc-login-"));
  env = { OTC_CONFIG_DIR: configDir };
});
afterEach(async () => {
  intercept = undefined;
  await rm(configDir, { recursive: true, force: true });
});

/** Runs `otc` in process; resolves with its exit code and what it printed. */
async function otc(args: string[]) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env,
  });
  return { code, stdout, stderr };
}

/**
 * Starts `otc login` in process. `authorizationUrl` resolves with the URL it prints for the browser (or rejects when
 * it ends before printing one); `done` with its exit code and output.
 */
function startLogin(args: string[], runtime?: LoginRuntime) {
  let stdout = "";
  let stderr = "";
  let printed: (url: string) => void = () => undefined;
  const seen = new Promise<string>((resolve) => {
    printed = resolve;
  });
  const io: Io = {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
      const url = /^ {2}(http:\/\/\S+\/auth\?\S+)$/m.exec(stderr)?.[1];
      if (url) {
        printed(url);
      }
    },
    env,
  };
  const done = (runtime ? loginCommand(args, io, runtime) : run(["login", ...args], io)).then((code) => ({
    code,
    stdout,
    stderr,
  }));
  const authorizationUrl = Promise.race([
    seen,
    done.then(({ code }) => {
      throw new Error(`otc login ended (${code}) before printing a URL: ${stderr}`);
    }),
  ]);
  return { authorizationUrl, done };
}

/**
 * Starts `otc <args>` as a process of its own, from the sources (tsx), on this test's config directory; `done`
 * resolves with its exit code and output. A child that outlives its test is killed.
 */
function spawnOtc(args: string[]) {
  const child: ChildProcessWithoutNullStreams = spawn(process.execPath, ["--import", "tsx", "src/main.ts", ...args], {
    cwd: packageDir,
    env: { PATH: process.env.PATH ?? "", OTC_CONFIG_DIR: configDir },
    stdio: "pipe",
  });
  onTestFinished(() => {
    child.kill("SIGKILL");
  });
  let stdout = "";
  let stderr = "";
  child.stdout.on("data", (chunk) => {
    stdout += String(chunk);
  });
  child.stderr.on("data", (chunk) => {
    stderr += String(chunk);
  });
  const done = new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    child.on("close", (code) => resolve({ code, stdout, stderr }));
  });
  return { done };
}

/** Signs alice in through `otc login`: the URL it prints driven through login and consent, then its redirect followed. */
async function login(args: string[] = ["--client-id", CLIENT_ID]) {
  const started = startLogin([serverUrl, "--no-browser", ...args]);
  const { redirectUrl } = await completeAuthorization(await started.authorizationUrl, { user: ALICE });
  const page = await fetch(redirectUrl);
  const result = await started.done;
  return { ...result, page: { status: page.status, text: await page.text() } };
}

const readFileJson = async (): Promise<CredentialsFile> => JSON.parse(await readFile(credentialsPath(env), "utf8"));
const storedSignIn = async (): Promise<StoredSignIn> => {
  const file = await readFileJson();
  const signIn = file.servers[serverUrl.replace(/\/$/, "")];
  if (!signIn) {
    throw new Error(`no sign-in for ${serverUrl} in ${JSON.stringify(Object.keys(file.servers))}`);
  }
  return signIn;
};
const writeSignIn = async (signIn: StoredSignIn) => {
  const file = await readFileJson();
  file.servers[serverUrl.replace(/\/$/, "")] = signIn;
  await writeFile(credentialsPath(env), JSON.stringify(file));
};

describe("otc login", () => {
  it("signs in through the browser and keeps the tokens in a file only the user can read, printing none", async () => {
    const result = await login();
    expect(result.code, result.stderr).toBe(EXIT.ok);
    expect(result.page).toEqual({ status: 200, text: expect.stringContaining(`Signed in to ${resource}`) });
    expect(result.stdout).toContain(`Signed in to ${resource} at ${as.issuer}`);
    expect(result.stdout).toContain("scopes: oxp:tools:read oxp:tools:call");

    expect((await stat(credentialsPath(env))).mode & 0o777).toBe(0o600);
    expect((await stat(configDir)).mode & 0o777).toBe(0o700);
    const signIn = await storedSignIn();
    expect(signIn).toEqual({
      resource,
      issuer: as.issuer,
      client_id: CLIENT_ID,
      access_token: expect.any(String),
      refresh_token: expect.any(String),
      expires_at: expect.any(String),
      scope: expect.stringContaining("oxp:tools:read oxp:tools:call"),
    });
    expect(Date.parse(signIn.expires_at as string)).toBeGreaterThan(Date.now());
    for (const output of [result.stdout, result.stderr, result.page.text]) {
      expect(output).not.toContain(signIn.access_token);
      expect(output).not.toContain(signIn.refresh_token);
    }
  });

  it("asks for the server's tool scopes, offline_access, PKCE S256, a state and the server as resource", async () => {
    const started = startLogin([serverUrl, "--no-browser", "--client-id", CLIENT_ID]);
    const url = new URL(await started.authorizationUrl);
    const query = Object.fromEntries(url.searchParams);
    expect(query).toEqual({
      response_type: "code",
      client_id: CLIENT_ID,
      redirect_uri: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\/callback$/),
      scope: "oxp:tools:read oxp:tools:call offline_access",
      state: expect.stringMatching(/^[\w-]{20,}$/),
      code_challenge: expect.stringMatching(/^[\w-]{43}$/),
      code_challenge_method: "S256",
      resource,
    });
    const { redirectUrl } = await completeAuthorization(url.href, { user: ALICE });
    await fetch(redirectUrl);
    expect((await started.done).code).toBe(EXIT.ok);
  });

  it("is the credential otc tools and otc call use for that server", async () => {
    // Before: the server refuses a request without credentials.
    const before = await otc(["tools", "--url", serverUrl]);
    expect(before.code).toBe(EXIT.authentication);
    expect((await login()).code).toBe(EXIT.ok);
    const tools = await otc(["tools", "--url", serverUrl]);
    expect(tools.code, tools.stderr).toBe(EXIT.ok);
    expect(tools.stdout).toContain("Say");
    const call = await otc(["call", "Echo.Say", "--url", `${serverUrl}/`, "--input", '{"text": "hi"}']);
    expect(call).toMatchObject({ code: EXIT.ok, stdout: "hi\n" });
  });

  it("refreshes an access token about to expire before sending it, and keeps the rotated refresh token", async () => {
    expect((await login()).code).toBe(EXIT.ok);
    const signIn = await storedSignIn();
    const expired = await as.mintAccessToken({ sub: ALICE.id, client_id: CLIENT_ID, exp: 1_000_000 });
    await writeSignIn({ ...signIn, access_token: expired, expires_at: new Date(Date.now() - 1000).toISOString() });
    as.clearRequests();
    const tools = await otc(["tools", "--url", serverUrl]);
    expect(tools.code, tools.stderr).toBe(EXIT.ok);
    expect(as.count("token", "refresh_token")).toBe(1);
    const renewed = await storedSignIn();
    expect(renewed.access_token).not.toBe(expired);
    expect(renewed.refresh_token).toEqual(expect.any(String));
    expect(renewed.refresh_token).not.toBe(signIn.refresh_token);
    expect(Date.parse(renewed.expires_at as string)).toBeGreaterThan(Date.now());
    expect((await stat(credentialsPath(env))).mode & 0o777).toBe(0o600);
    expect(`${tools.stdout}${tools.stderr}`).not.toContain(renewed.access_token);
  });

  it("refreshes an access token the server refuses with a 401, and sends the call again with the new one", async () => {
    expect((await login()).code).toBe(EXIT.ok);
    const signIn = await storedSignIn();
    // The file says it is good for an hour; the server knows better.
    const expired = await as.mintAccessToken({ sub: ALICE.id, client_id: CLIENT_ID, exp: 1_000_000 });
    await writeSignIn({ ...signIn, access_token: expired, expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    as.clearRequests();
    const call = await otc(["call", "Echo.Say", "--url", serverUrl, "--input", '{"text": "again"}']);
    expect(call, call.stderr).toMatchObject({ code: EXIT.ok, stdout: "again\n" });
    expect(as.count("token", "refresh_token")).toBe(1);
    expect((await storedSignIn()).refresh_token).not.toBe(signIn.refresh_token);
  });

  it("shares one refresh among concurrent asks", async () => {
    expect((await login()).code).toBe(EXIT.ok);
    const signIn = await storedSignIn();
    const provider = storedSignInProvider({ env, signIn });
    as.clearRequests();
    const tokens = await Promise.all([
      provider({ reason: "unauthorized" }),
      provider({ reason: "unauthorized" }),
      provider({ reason: "initial" }),
    ]);
    expect(as.count("token", "refresh_token")).toBe(1);
    expect(new Set(tokens).size).toBe(1);
    expect(tokens[0]).not.toBe(signIn.access_token);
  });

  it("lets two otc processes renewing one sign-in at once spend its refresh token once, under the file's lock", async () => {
    expect((await login()).code).toBe(EXIT.ok);
    const signIn = await storedSignIn();
    // Expired, though the file says it is good for an hour: each otc sends it, and renews it on the server's 401.
    // That 401 is where the two are made to meet: the tool server holds both requests until both have come, then
    // answers them together, so that both renew at the same moment (as two commands started together would).
    const expired = await as.mintAccessToken({ sub: ALICE.id, client_id: CLIENT_ID, exp: 1_000_000 });
    await writeSignIn({ ...signIn, access_token: expired, expires_at: new Date(Date.now() + 3_600_000).toISOString() });
    const held: Array<() => void> = [];
    const letThrough = () => {
      for (const pass of held.splice(0)) {
        pass();
      }
    };
    intercept = (request, _response, pass) => {
      if (request.headers.authorization !== `Bearer ${expired}`) {
        pass();
        return;
      }
      held.push(pass);
      if (held.length === 2) {
        letThrough();
      }
    };
    as.clearRequests();
    const children = [spawnOtc(["tools", "--url", serverUrl]), spawnOtc(["tools", "--url", serverUrl])];
    // One that ends before the other reached the server (a crash) must not leave the other held.
    for (const child of children) {
      void child.done.then(letThrough);
    }
    const results = await Promise.all(children.map((child) => child.done));
    for (const result of results) {
      expect(result.code, result.stderr).toBe(EXIT.ok);
      expect(result.stdout).toContain("Say");
    }
    expect(as.count("token", "refresh_token")).toBe(1);
    expect(as.requests.filter((request) => request.error !== undefined)).toEqual([]);
    // The stored refresh token is the live one: the authorization server takes it (and it was not revoked).
    const stored = await storedSignIn();
    expect(stored.access_token).not.toBe(expired);
    expect(stored.refresh_token).not.toBe(signIn.refresh_token);
    const renewed = await as.refresh({ clientId: CLIENT_ID, refreshToken: stored.refresh_token as string, resource });
    expect(renewed.accessToken).toEqual(expect.any(String));
    expect(await stat(credentialsLockPath(env)).catch((error: NodeJS.ErrnoException) => error.code)).toBe("ENOENT");
  });

  it("tells the user to sign in again when the refresh fails", async () => {
    expect((await login()).code).toBe(EXIT.ok);
    const signIn = await storedSignIn();
    const expired = await as.mintAccessToken({ sub: ALICE.id, client_id: CLIENT_ID, exp: 1_000_000 });
    await writeSignIn({ ...signIn, access_token: expired, refresh_token: "not-a-refresh-token" });
    const tools = await otc(["tools", "--url", serverUrl]);
    expect(tools.code).toBe(EXIT.authentication);
    expect(tools.stderr).toContain(`run otc login ${resource} again`);
    expect(tools.stderr).toContain("invalid_grant");
  });

  it("gives way to --api-key: the stored sign-in is neither sent nor refreshed", async () => {
    expect((await login()).code).toBe(EXIT.ok);
    const signIn = await storedSignIn();
    await writeSignIn({ ...signIn, expires_at: new Date(Date.now() - 1000).toISOString() });
    as.clearRequests();
    const tools = await otc(["tools", "--url", serverUrl, "--api-key", API_KEY]);
    expect(tools.code, tools.stderr).toBe(EXIT.ok);
    expect(as.count("token")).toBe(0);
  });

  it.each([
    ["another state", "state", "another-state", "its state does not match"],
    ["another issuer", "iss", "https://elsewhere.example", "its iss does not match"],
  ])("refuses an answer with %s, stores nothing, and says why", async (_name, parameter, value, why) => {
    const started = startLogin([serverUrl, "--no-browser", "--client-id", CLIENT_ID]);
    const { redirectUrl } = await completeAuthorization(await started.authorizationUrl, { user: ALICE });
    const forged = new URL(redirectUrl);
    forged.searchParams.set(parameter, value);
    const page = await fetch(forged);
    const result = await started.done;
    expect(result.code).toBe(EXIT.authentication);
    expect(result.stderr).toContain(why);
    expect(page.status).toBe(400);
    expect(await page.text()).toContain("The sign-in failed");
    await expect(stat(credentialsPath(env))).rejects.toThrow(/ENOENT/);
  });

  it("reports a denied sign-in (access_denied) and stores nothing", async () => {
    const started = startLogin([serverUrl, "--no-browser", "--client-id", CLIENT_ID]);
    const { redirectUrl, error } = await completeAuthorization(await started.authorizationUrl, {
      user: ALICE,
      deny: true,
    });
    expect(error).toBe("access_denied");
    await fetch(redirectUrl);
    const result = await started.done;
    expect(result.code).toBe(EXIT.authentication);
    expect(result.stderr).toContain("the sign-in was denied: access_denied");
    await expect(stat(credentialsPath(env))).rejects.toThrow(/ENOENT/);
  });

  it("gives up after its time limit, closing its loopback listener", async () => {
    const clock = new ManualClock();
    const started = startLogin([serverUrl, "--no-browser", "--client-id", CLIENT_ID, "--timeout-seconds", "60"], {
      clock,
    });
    const url = new URL(await started.authorizationUrl);
    await clock.advance(59_000);
    await clock.advance(1_000);
    const result = await started.done;
    expect(result.code).toBe(EXIT.connection);
    expect(result.stderr).toContain("did not complete within 60 seconds");
    await expect(fetch(url.searchParams.get("redirect_uri") as string)).rejects.toThrow();
    await expect(stat(credentialsPath(env))).rejects.toThrow(/ENOENT/);
  });

  it("says what to do when the authorization server registers no clients and no --client-id is given", async () => {
    const started = startLogin([serverUrl, "--no-browser"]);
    await expect(started.authorizationUrl).rejects.toThrow();
    const result = await started.done;
    expect(result.code).toBe(EXIT.authentication);
    expect(result.stderr).toContain("no registration_endpoint");
    expect(result.stderr).toContain("--client-id ID");
  });

  it("registers itself where the authorization server allows it (RFC 7591), and reuses that client", async () => {
    // A tool server of its own, trusting an authorization server with dynamic registration open.
    const registering = createHttpServer();
    await new Promise<void>((resolve) => registering.listen(0, "127.0.0.1", resolve));
    onTestFinished(async () => {
      registering.closeAllConnections();
      await new Promise((resolve) => registering.close(resolve));
    });
    const url = `http://127.0.0.1:${(registering.address() as AddressInfo).port}`;
    const open = await startAuthorizationServer({
      resources: [{ url, scopes: ["oxp:tools:read", "oxp:tools:call"] }],
      users: [{ id: ALICE.id, password: ALICE.password }],
      dynamicRegistration: true,
    });
    onTestFinished(() => open.stop());
    registering.on(
      "request",
      createServer({ tools: [echo], auth: { oauth: { authorizationServers: [open.issuer], resource: url } } }),
    );
    const metadata = (await (await fetch(open.url("/.well-known/openid-configuration"))).json()) as {
      registration_endpoint?: string;
    };
    expect(metadata.registration_endpoint).toEqual(expect.any(String));

    const signInThere = async () => {
      const started = startLogin([url, "--no-browser"]);
      const authorizationUrl = new URL(await started.authorizationUrl);
      const { redirectUrl } = await completeAuthorization(authorizationUrl.href, { user: ALICE });
      await fetch(redirectUrl);
      return { clientId: authorizationUrl.searchParams.get("client_id"), result: await started.done };
    };
    const first = await signInThere();
    expect(first.result.code, first.result.stderr).toBe(EXIT.ok);
    expect(open.count("registration")).toBe(1);
    expect(first.clientId).toEqual(expect.any(String));
    expect(first.clientId).not.toBe(CLIENT_ID);
    const file = await readFileJson();
    expect(file.clients).toEqual({ [open.issuer]: { client_id: first.clientId } });
    expect(file.servers[url]).toMatchObject({ resource: url, issuer: open.issuer, client_id: first.clientId });
    expect(file.servers[url]?.refresh_token).toEqual(expect.any(String));
    const tools = await otc(["tools", "--url", url]);
    expect(tools.code, tools.stderr).toBe(EXIT.ok);
    expect(tools.stdout).toContain("Say");

    // The next login there signs in as the same client, registering nothing.
    const second = await signInThere();
    expect(second.result.code, second.result.stderr).toBe(EXIT.ok);
    expect(second.clientId).toBe(first.clientId);
    expect(open.count("registration")).toBe(1);

    // Open to clients like otc only: public, native, redirected to a loopback address.
    const refused = await fetch(metadata.registration_endpoint as string, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        redirect_uris: ["http://127.0.0.1/callback"],
        token_endpoint_auth_method: "client_secret_basic",
        application_type: "native",
      }),
    });
    expect(refused.status).toBe(400);
    expect(await refused.json()).toMatchObject({
      error: "invalid_client_metadata",
      error_description: expect.stringContaining("only public clients"),
    });
  });

  it("refuses a URL that is not the server's canonical one, naming the one to use", async () => {
    const other = serverUrl.replace("127.0.0.1", "localhost");
    const started = startLogin([other, "--no-browser", "--client-id", CLIENT_ID]);
    await expect(started.authorizationUrl).rejects.toThrow();
    const result = await started.done;
    expect(result.code).toBe(EXIT.authentication);
    expect(result.stderr).toContain(`says its canonical URL is ${resource}`);
  });

  it("refuses a server without OAuth", async () => {
    const plain = createHttpServer(createServer({ tools: [echo] }));
    await new Promise<void>((resolve) => plain.listen(0, "127.0.0.1", resolve));
    try {
      const url = `http://127.0.0.1:${(plain.address() as AddressInfo).port}`;
      const result = await otc(["login", url, "--no-browser", "--client-id", CLIENT_ID]);
      expect(result.code).toBe(EXIT.authentication);
      expect(result.stderr).toContain("offers no OAuth sign-in");
    } finally {
      plain.closeAllConnections();
      await new Promise((resolve) => plain.close(resolve));
    }
  });

  it("says which server it could not reach", async () => {
    const closed = createHttpServer();
    await new Promise<void>((resolve) => closed.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(closed.address() as AddressInfo).port}`;
    await new Promise((resolve) => closed.close(resolve));
    const result = await otc(["login", url, "--no-browser", "--client-id", CLIENT_ID]);
    expect(result.code).toBe(EXIT.connection);
    expect(result.stderr).toContain(`cannot read the resource metadata of ${url}: fetch failed (connect ECONNREFUSED`);
  });

  it("stops when interrupted, closing its listener and storing nothing", async () => {
    const interrupt = new AbortController();
    let stderr = "";
    let printed: () => void = () => undefined;
    const seen = new Promise<void>((resolve) => {
      printed = resolve;
    });
    const done = run(["login", serverUrl, "--no-browser", "--client-id", CLIENT_ID], {
      stdout: () => undefined,
      stderr: (text) => {
        stderr += text;
        if (stderr.includes("Waiting for the sign-in")) {
          printed();
        }
      },
      env,
      interrupt: interrupt.signal,
    });
    await seen;
    interrupt.abort();
    expect(await done).toBe(EXIT.interrupted);
    expect(stderr).toContain("interrupted: nothing was stored");
    await expect(stat(credentialsPath(env))).rejects.toThrow(/ENOENT/);
  });

  it("refuses a credentials file it did not write, unless another credential is given", async () => {
    await writeFile(credentialsPath(env), "{not json");
    expect(await otc(["tools", "--url", serverUrl])).toMatchObject({
      code: EXIT.usage,
      stderr: expect.stringContaining("credentials.json is not valid JSON: delete it and run otc login again"),
    });
    expect((await otc(["tools", "--url", serverUrl, "--api-key", API_KEY])).code).toBe(EXIT.ok);
  });

  it("takes its options and the URL, and refuses others", async () => {
    expect(await otc(["login"])).toMatchObject({ code: EXIT.usage, stderr: expect.stringContaining("login needs") });
    expect(await otc(["login", serverUrl, "--bogus"])).toMatchObject({ code: EXIT.usage });
    expect(await otc(["login", "ftp://x"])).toMatchObject({ code: EXIT.usage });
    expect(await otc(["login", serverUrl, "--timeout-seconds", "0"])).toMatchObject({ code: EXIT.usage });
    expect(await otc(["logout", serverUrl, "--scope", "a"])).toMatchObject({ code: EXIT.usage });
    expect(await otc(["login", "--help"])).toMatchObject({
      code: EXIT.ok,
      stdout: expect.stringContaining("otc login <url>"),
    });
  });
});

describe("otc logout", () => {
  it("revokes the refresh token at the authorization server and forgets the sign-in", async () => {
    expect((await login()).code).toBe(EXIT.ok);
    const signIn = await storedSignIn();
    as.clearRequests();
    const result = await otc(["logout", serverUrl]);
    expect(result.code, result.stderr).toBe(EXIT.ok);
    expect(result.stdout).toContain(`Signed out of ${resource}: the refresh token was revoked`);
    expect(as.count("revocation")).toBe(1);
    expect((await readFileJson()).servers).toEqual({});
    // Revoked: the authorization server no longer takes it.
    await expect(
      as.refresh({ clientId: CLIENT_ID, refreshToken: signIn.refresh_token as string, resource }),
    ).rejects.toThrow(/invalid_grant/);
    expect((await otc(["tools", "--url", serverUrl])).code).toBe(EXIT.authentication);
    // Nothing left to do the second time.
    expect(await otc(["logout", serverUrl])).toMatchObject({
      code: EXIT.ok,
      stdout: expect.stringContaining("Not signed in"),
    });
    expect(as.count("revocation")).toBe(1);
  });
});
