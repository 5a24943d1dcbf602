// otc connections list|add|remove in process against a real @otc/server on loopback whose vault connects accounts at a real provider (oidc-provider playing "Example Accounts"); the browser's part of the flow is driven over HTTP.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpServer } from "node:http";
import type { AddressInfo } from "node:net";
import os from "node:os";
import path from "node:path";
import { createHandler, listen, type RunningServer } from "@otc/server/node";
import { freePort } from "@otc/test-helpers/free-port";
import { json } from "@otc/test-helpers/hostile-server";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import type { Connection, ConnectionFlow } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type RunRuntime, run } from "./cli.js";
import { CONNECTIONS_USAGE, formatConnections, parseConnections } from "./connections-command.js";
import { type CredentialsFile, credentialsPath, resourceKey } from "./credentials.js";
import { EXIT } from "./io.js";

const API_KEY = "key-of-the-agent-platform";
/** The host application's session cookie: its value names the browser's signed-in user. */
const SESSION = "session";

let provider: AuthorizationServer;
let server: RunningServer;
/** A server without `connections`. */
let plain: RunningServer;

beforeAll(async () => {
  // The provider registers the exact redirect URI, so the tool server's port is known first.
  const port = await freePort();
  const serverUrl = `http://127.0.0.1:${port}`;
  provider = await startAuthorizationServer({
    // The tool server also takes OAuth access tokens (otc login's), whose subject is the user.
    resources: [{ url: serverUrl, scopes: ["oxp:tools:read", "oxp:tools:call"] }],
    clients: [
      {
        clientId: "oxp-vault",
        clientSecret: "vault-secret",
        redirectUris: [`http://127.0.0.1:${port}/connections/callback`],
        grantTypes: ["authorization_code", "refresh_token"],
      },
    ],
    users: ["alice", "bob", "carol", "ann"].map((id) => ({ id, password: `${id}-password` })),
  });
  server = await listen(
    createHandler({
      tools: [],
      logger: false,
      publicUrl: serverUrl,
      auth: { apiKeys: [API_KEY], oauth: { authorizationServers: [provider.issuer], resource: serverUrl } },
      connections: {
        providers: [
          {
            id: "example",
            name: "Example Accounts",
            issuer: provider.issuer,
            clientId: "oxp-vault",
            clientSecret: "vault-secret",
            scopes: ["openid", "offline_access"],
          },
        ],
        keys: [{ id: "k1", key: Buffer.alloc(32, 9).toString("base64url") }],
        verifyBrowser: (request, owner) => request.headers.get("cookie") === `${SESSION}=${owner.userId}`,
      },
    }),
    { port },
  );
  plain = await listen(createHandler({ tools: [], logger: false, auth: { apiKeys: [API_KEY] } }), { port: 0 });
});
afterAll(async () => {
  await Promise.all([server?.close(), plain?.close()]);
  await provider?.stop();
});

/**
 * Starts `otc` in process with the server's URL and API key in the environment. `opened` resolves with the first URL
 * it asks a browser to open; `done` with its exit code and what it printed (read `stdout` and `stderr` at any time).
 */
function start(
  args: string[],
  runtime: RunRuntime = {},
  baseUrl = server.url,
  env: Record<string, string> = { OXP_API_KEY: API_KEY },
  interrupt?: AbortSignal,
) {
  const output = { stdout: "", stderr: "" };
  const openedUrls: string[] = [];
  let opened: (url: string) => void = () => undefined;
  const firstOpened = new Promise<string>((resolve) => {
    opened = resolve;
  });
  const done = run(
    args,
    {
      stdout: (text) => {
        output.stdout += text;
      },
      stderr: (text) => {
        output.stderr += text;
      },
      env: { OXP_URL: baseUrl, ...env },
      ...(interrupt ? { interrupt } : {}),
    },
    {
      openUrl: async (url) => {
        openedUrls.push(url);
        opened(url);
      },
      ...runtime,
    },
  ).then((code) => ({ code, ...output }));
  return { done, opened: firstOpened, openedUrls, output };
}

/** Runs `otc` to its end. */
const otc = (args: string[], baseUrl = server.url) => start(args, {}, baseUrl).done;

/** Signs `user` in at the provider from the flow's url, and brings the browser back signed in to the host as `browserUser`. */
async function finishInBrowser(url: string, user: string, browserUser = user) {
  const { redirectUrl } = await provider.completeAuthorization(url, {
    user: { id: user, password: `${user}-password` },
  });
  const page = await fetch(redirectUrl, { headers: { cookie: `${SESSION}=${browserUser}` } });
  await page.text();
  return page.status;
}

describe("otc connections against a server with the extension", () => {
  it("add --wait opens the provider's page, waits until the browser finished, and prints the connection; list shows it; remove removes it", async () => {
    const clock = new ManualClock();
    const adding = start(["connections", "add", "example", "--user-id", "alice", "--wait"], { clock });
    const url = await adding.opened;
    expect(new URL(url).origin).toBe(provider.issuer);
    expect(adding.output.stdout).toBe(`To connect your example account, open this URL in a browser:\n  ${url}\n`);
    // The first read of the check_url said pending: otc waits on its clock before the next.
    await clock.untilPending(1);
    expect(adding.output.stderr).toBe("Waiting for the connection to complete...\n");
    expect(await finishInBrowser(url, "alice")).toBe(200);
    await clock.advance(1_000);
    const added = await adding.done;
    expect(added.code, added.stderr).toBe(EXIT.ok);
    const id = /\(connection (\S+)\)\.\n$/.exec(added.stdout)?.[1] as string;
    expect(added.stdout).toContain(`Connected your example account as alice (connection ${id}).\n`);
    expect(adding.openedUrls).toEqual([url]);

    const listed = await otc(["connections", "list", "--user-id", "alice"]);
    expect(listed.code, listed.stderr).toBe(EXIT.ok);
    const [header, row, ...rest] = listed.stdout.split("\n");
    expect(header).toMatch(/^ID +PROVIDER +STATUS +ACCOUNT +UPDATED$/);
    expect(row?.split(/ {2,}/)).toEqual([id, "example", "active", "alice", expect.stringMatching(/^\d{4}-\d\d-\d\dT/)]);
    expect(rest).toEqual([""]);
    const asJson = await otc(["connections", "list", "--user-id", "alice", "--json"]);
    expect(JSON.parse(asJson.stdout)).toEqual({
      items: [expect.objectContaining({ id, provider: "example", status: "active", account: "alice" })],
    });

    expect(await otc(["connections", "remove", id, "--user-id", "alice"])).toEqual({
      code: EXIT.ok,
      stdout: `Removed connection ${id}.\n`,
      stderr: "",
    });
    expect((await otc(["connections", "list", "--user-id", "alice"])).stdout).toBe(
      "No connections. Connect an account with otc connections add <provider>.\n",
    );
    const again = await otc(["connections", "remove", id, "--user-id", "alice"]);
    expect(again.code).toBe(EXIT.refused);
    expect(again.stderr).toMatch(/^The server refused the call: /);
  });

  it("add --no-browser prints the URL and opens nothing; with --json the flow is stdout's one document", async () => {
    const plainAdd = start(["connections", "add", "example", "--user-id", "bob", "--no-browser"]);
    const { code, stdout } = await plainAdd.done;
    expect(code).toBe(EXIT.ok);
    expect(stdout).toMatch(
      /^To connect your example account, open this URL in a browser:\n {2}http:\/\/127\.0\.0\.1:\d+\/\S+\nThe connection \S+ is pending until then \(otc connections list shows it once made\)\.\n$/,
    );
    expect(plainAdd.openedUrls).toEqual([]);

    const jsonAdd = start(["connections", "add", "example", "--user-id", "bob", "--scope", "openid", "--json"]);
    const added = await jsonAdd.done;
    expect(added.code).toBe(EXIT.ok);
    const flow = JSON.parse(added.stdout) as ConnectionFlow;
    expect(flow).toEqual({
      id: expect.any(String),
      status: "pending",
      url: expect.any(String),
      check_url: expect.any(String),
    });
    expect(new URL(flow.url).searchParams.get("scope")).toBe("openid");
    expect(added.stderr).toBe(`To connect your example account, open this URL in a browser:\n  ${flow.url}\n`);
    expect(jsonAdd.openedUrls).toEqual([flow.url]);
    expect(JSON.parse((await otc(["connections", "list", "--user-id", "bob", "--json"])).stdout)).toEqual({
      items: [],
    });
  });

  it("add --wait exits 5 when the flow failed: another user's browser came back", async () => {
    const clock = new ManualClock();
    const adding = start(["connections", "add", "example", "--user-id", "bob", "--wait", "--no-browser"], { clock });
    await clock.untilPending(1);
    const url = /^ {2}(\S+)$/m.exec(adding.output.stdout)?.[1] as string;
    expect(await finishInBrowser(url, "carol")).toBe(403);
    await clock.advance(1_000);
    const { code, stderr } = await adding.done;
    expect(code).toBe(EXIT.refused);
    expect(stderr).toBe(
      "Waiting for the connection to complete...\nThe connection failed: denied at the provider, expired, or finished in another user's browser.\n",
    );
  });

  it("add --wait stops on Ctrl-C (exit 130), saying the flow stays open", async () => {
    const clock = new ManualClock();
    const ctrlC = new AbortController();
    const args = ["connections", "add", "example", "--user-id", "bob", "--wait", "--no-browser"];
    const adding = start(args, { clock }, server.url, { OXP_API_KEY: API_KEY }, ctrlC.signal);
    await clock.untilPending(1);
    ctrlC.abort();
    const { code, stderr } = await adding.done;
    expect(code).toBe(EXIT.interrupted);
    expect(stderr).toBe(
      "Waiting for the connection to complete...\nInterrupted: the flow stays open until it expires; otc connections list shows whether it completed.\n",
    );
  });

  it("without a user, the server's 400 (exit 5); a wrong API key, exit 4", async () => {
    const noUser = await otc(["connections", "list"]);
    expect(noUser.code).toBe(EXIT.refused);
    expect(noUser.stderr).toContain("A user id is required");
    const unknown = await otc(["connections", "add", "nowhere", "--user-id", "alice", "--no-browser"]);
    expect(unknown.code).toBe(EXIT.refused);
    const wrongKey = await run(["connections", "list", "--user-id", "alice", "--api-key", "not-the-key"], {
      stdout: () => undefined,
      stderr: () => undefined,
      env: { OXP_URL: server.url },
    });
    expect(wrongKey).toBe(EXIT.authentication);
  });
});

describe("otc connections with an otc login sign-in", () => {
  it("sends the stored access token: the user is its subject, no --user-id needed", async () => {
    const configDir = await mkdtemp(path.join(os.tmpdir(), "otc-connections-"));
    const env = { OTC_CONFIG_DIR: configDir };
    try {
      const accessToken = await provider.mintAccessToken({ sub: "ann", scope: "oxp:tools:read oxp:tools:call" });
      const signIns: CredentialsFile = {
        version: 1,
        servers: {
          [resourceKey(server.url)]: {
            resource: server.url,
            issuer: provider.issuer,
            client_id: "otc-cli",
            access_token: accessToken,
            expires_at: new Date(Date.now() + 3_600_000).toISOString(),
            scope: "oxp:tools:read oxp:tools:call",
          },
        },
        clients: {},
      };
      await writeFile(credentialsPath(env), JSON.stringify(signIns), { mode: 0o600 });
      const clock = new ManualClock();
      const adding = start(["connections", "add", "example", "--wait"], { clock }, server.url, env);
      const url = await adding.opened;
      await clock.untilPending(1);
      expect(await finishInBrowser(url, "ann")).toBe(200);
      await clock.advance(1_000);
      const added = await adding.done;
      expect(added.code, added.stderr).toBe(EXIT.ok);
      expect(added.stdout).toMatch(/Connected your example account as ann \(connection \S+\)\.\n$/);
      const listed = await start(["connections", "list", "--json"], {}, server.url, env).done;
      expect(JSON.parse(listed.stdout).items).toEqual([
        expect.objectContaining({ provider: "example", account: "ann" }),
      ]);
      // Another user than the token's subject is the server's 403 (the token may not act for others).
      const other = await start(["connections", "list", "--user-id", "alice"], {}, server.url, env).done;
      expect(other.code).toBe(EXIT.refused);
    } finally {
      await rm(configDir, { recursive: true, force: true });
    }
  });
});

describe("otc connections elsewhere", () => {
  it("a server without the extension: exit 5, saying so", async () => {
    const { code, stdout, stderr } = await otc(["connections", "list", "--user-id", "alice"], plain.url);
    expect(code).toBe(EXIT.refused);
    expect(stdout).toBe("");
    expect(stderr).toMatch(/needs the connections extension, which the server does not offer/);
  });

  it("what the server sends is printed terminal-safe, and a table row stays one line", async () => {
    const hostile: Connection = {
      id: "c_\u001b[2J",
      provider: "example",
      status: "active",
      scopes: [],
      account: "mallory\n\u001b]8;;https://evil.example\u0007click\u202e",
      created_at: "2026-12-01T10:00:00Z",
      updated_at: "2026-12-01T10:00:00Z",
    };
    const fake = createHttpServer((req, res) =>
      req.url === "/.well-known/oxp"
        ? json(res, 200, { oxp_versions: ["1.0"], extensions: ["connections"] })
        : json(res, 200, { items: [hostile] }),
    );
    await new Promise<void>((resolve) => fake.listen(0, "127.0.0.1", resolve));
    try {
      const { code, stdout } = await otc(
        ["connections", "list", "--user-id", "alice"],
        `http://127.0.0.1:${(fake.address() as AddressInfo).port}`,
      );
      expect(code).toBe(EXIT.ok);
      expect(stdout.split("\n")).toHaveLength(3);
      expect(stdout).toContain(
        "c_\\u001b[2J  example   active  mallory\\n\\u001b]8;;https://evil.example\\u0007click\\u202e  2026-12-01T10:00:00Z",
      );
    } finally {
      fake.closeAllConnections();
      await new Promise((resolve) => fake.close(resolve));
    }
  });
});

describe("parseConnections", () => {
  it.each<[string, string[], Parameters<typeof parseConnections>[1], ReturnType<typeof parseConnections>]>([
    ["list", ["list"], {}, { action: "list" }],
    ["list for a user", ["list"], { "user-id": "alice" }, { action: "list", userId: "alice" }],
    ["add, defaults", ["add", "google"], {}, { action: "add", provider: "google", browser: true, wait: false }],
    [
      "add, scopes repeated or spaced",
      ["add", "google"],
      { scope: ["openid email", "gmail.readonly"], "no-browser": true, wait: true },
      { action: "add", provider: "google", scopes: ["openid", "email", "gmail.readonly"], browser: false, wait: true },
    ],
    ["remove", ["remove", "c_1"], { "user-id": "bob" }, { action: "remove", id: "c_1", userId: "bob" }],
    ["nothing", [], {}, CONNECTIONS_USAGE],
    ["an unknown action", ["delete", "c_1"], {}, `unknown action 'delete': ${CONNECTIONS_USAGE}`],
    ["list with an argument", ["list", "google"], {}, `unexpected argument 'google': ${CONNECTIONS_USAGE}`],
    [
      "add without a provider",
      ["add"],
      {},
      "otc connections add needs a provider's id, e.g. otc connections add google",
    ],
    [
      "add with a provider that is no id",
      ["add", "g/oogle"],
      {},
      "'g/oogle' is not a provider id: letters, digits, '_' and '-', at most 64",
    ],
    [
      "an empty scope",
      ["add", "google"],
      { scope: [" "] },
      "--scope takes 1 to 64 scopes of at most 256 characters, e.g. --scope openid --scope email",
    ],
    [
      "remove without an id",
      ["remove"],
      {},
      "otc connections remove needs a connection's id (otc connections list shows them)",
    ],
    ["remove with two ids", ["remove", "a", "b"], {}, `unexpected argument 'b': ${CONNECTIONS_USAGE}`],
    [
      "an option of add with list",
      ["list"],
      { wait: true },
      "--wait is an option of otc connections add, not of otc connections list",
    ],
    ["an empty user", ["list"], { "user-id": "" }, "--user-id must not be empty, e.g. --user-id alice"],
  ])("%s", (_name, args, flags, expected) => {
    expect(parseConnections(args, flags)).toEqual(expected);
  });

  it("its usage errors reach the command line as otc's (exit 2), nothing sent", async () => {
    const { code, stderr } = await otc(["connections", "add", "--wait"]);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toBe(
      "otc: otc connections add needs a provider's id, e.g. otc connections add google\nRun 'otc --help' for usage.\n",
    );
  });
});

describe("formatConnections", () => {
  it("aligns the columns on what is printed, with - for an unknown account", () => {
    const at = "2026-12-01T10:00:00Z";
    const rows: Connection[] = [
      {
        id: "c_1",
        provider: "google",
        status: "active",
        scopes: [],
        account: "alice@example.com",
        created_at: at,
        updated_at: at,
      },
      { id: "c_22", provider: "gh", status: "auth_required", scopes: [], created_at: at, updated_at: at },
    ];
    expect(formatConnections(rows)).toBe(
      [
        "ID    PROVIDER  STATUS         ACCOUNT            UPDATED",
        `c_1   google    active         alice@example.com  ${at}`,
        `c_22  gh        auth_required  -                  ${at}`,
        "",
      ].join("\n"),
    );
  });
});
