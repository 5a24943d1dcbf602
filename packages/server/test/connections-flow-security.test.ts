// The connection flow's defences (docs/protocol.md 9.7, `[connections.flow]`) against a real provider, oidc-provider on loopback, whose request log shows what the vault sent it: PKCE, the exact redirect URI and its origin, a state good once however many callbacks come for it at once, the lock that orders them giving up on the server's clock, and the vault's bounds met by completed flows.
import { randomBytes } from "node:crypto";
import { request as httpRequest } from "node:http";
import { Writable } from "node:stream";
import { freePort } from "@otc/test-helpers/free-port";
import { ManualClock } from "@otc/test-helpers/manual-clock";
import {
  type AuthorizationServer,
  type AuthorizationServerRequest,
  codeChallengeOf,
  startAuthorizationServer,
} from "@otc/test-helpers/oidc-provider";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CALLBACK_LOCK_MS } from "../src/connections/vault.js";
import {
  ConnectionLockTimeoutError,
  createLogger,
  defineTool,
  listen,
  MemoryConnectionStore,
  type ServerOptions,
  type TokenOwner,
} from "../src/index.js";
import { callTool, expectError, makeServer, type Reply, send } from "./harness.js";

const API_KEY = "key-of-the-agent-platform";
const PRINCIPAL = "api-key:0";
const SESSION = "session";
const USERS = ["alice", "bob", "carol", "dave", "erin", "frank", "gina", "mallory"];

let provider: AuthorizationServer;

/** Reads the connected account's profile at the provider: the token the vault holds still works there. */
const whoAmI = defineTool({
  toolkit: "Example",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Reads the connected account's profile at the provider.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "object" },
  requirements: { user_id: true, authorization: [{ id: "example", oauth2: { scopes: ["openid"] } }] },
  run: async (_input, ctx) => {
    const response = await fetch(provider.url("/me"), { headers: { Authorization: `Bearer ${ctx.tokens.example}` } });
    const profile = (await response.json()) as { sub?: string };
    return { status: response.status, sub: profile.sub ?? null };
  },
});

interface Server {
  url: string;
  port: number;
  clock: ManualClock;
  /** The store the server was given; undefined for one left to make its own. */
  store: MemoryConnectionStore | undefined;
  lines: string[];
  /** Runs before each browser check, in the callback: where a test holds a callback back. */
  beforeBrowserCheck: ((owner: TokenOwner) => Promise<void>) | undefined;
  close(): Promise<void>;
}

/** How a test's tool server differs from the one most tests use. */
interface ServerChoices {
  /** false leaves the vault to make its default store; a function makes the store, on the server's clock. */
  ownStore?: boolean | ((clock: ManualClock) => MemoryConnectionStore);
  /** false serves without `publicUrl`: flows' redirect URIs are built from the address their start reached. */
  publicUrl?: boolean;
  allowedHosts?: ServerOptions["allowedHosts"];
  maxConnectionsPerUser?: number;
}

/**
 * A tool server on a port the provider knows (its redirect URI names it exactly). Its store follows the server's own
 * clock; `ownStore: false` leaves the vault to make its default one.
 */
async function startToolServer(
  port: number,
  { ownStore = true, publicUrl = true, allowedHosts, maxConnectionsPerUser }: ServerChoices = {},
): Promise<Server> {
  const clock = new ManualClock(Date.now());
  const store =
    typeof ownStore === "function" ? ownStore(clock) : ownStore ? new MemoryConnectionStore({ clock }) : undefined;
  const lines: string[] = [];
  const server: Server = {
    url: "",
    port,
    clock,
    store,
    lines,
    beforeBrowserCheck: undefined,
    close: async () => {},
  };
  const app = makeServer({
    tools: [whoAmI],
    validateResponses: true,
    clock,
    ...(publicUrl ? { publicUrl: `http://127.0.0.1:${port}` } : {}),
    ...(allowedHosts ? { allowedHosts } : {}),
    auth: { apiKeys: [API_KEY] },
    logger: createLogger({
      level: "debug",
      destination: new Writable({
        write(chunk, _encoding, done) {
          lines.push(...String(chunk).split("\n").filter(Boolean));
          done();
        },
      }),
    }),
    connections: {
      providers: [
        {
          id: "example",
          name: "Example Accounts",
          issuer: provider.issuer,
          clientId: "oxp-vault",
          clientSecret: "vault-secret",
          scopes: ["openid", "email", "offline_access"],
        },
      ],
      keys: [{ id: "k1", key: randomBytes(32).toString("base64url") }],
      // The host application's session: the browser's cookie names its user.
      verifyBrowser: async (request, owner) => {
        await server.beforeBrowserCheck?.(owner);
        return request.headers.get("cookie") === `${SESSION}=${owner.userId}`;
      },
      ...(store ? { store } : {}),
      ...(maxConnectionsPerUser === undefined ? {} : { maxConnectionsPerUser }),
    },
  });
  const running = await listen(app, { port });
  server.url = running.url;
  server.close = running.close;
  return server;
}

const asked = { "OXP-API-Key": API_KEY, "OXP-Extensions": "connections", "Content-Type": "application/json" };
const start = (server: Server, userId: string) =>
  send(`${server.url}/connections`, {
    method: "POST",
    headers: asked,
    body: JSON.stringify({ provider: "example", user_id: userId }),
  });
/** Signs `user` in at the provider and consents: where the provider sends the browser back, not followed. */
const authorize = (url: string, user: string) =>
  provider.completeAuthorization(url, { user: { id: user, password: `${user}-password` } });
/** The browser of `cookieUser` opening the callback URL. */
const back = (redirectUrl: string, cookieUser: string) =>
  send(redirectUrl, { headers: { cookie: `${SESSION}=${cookieUser}` } });
const statusOf = async (checkUrl: string) =>
  (await send(checkUrl, { headers: { "OXP-API-Key": API_KEY } })).body?.status as string;
const call = (server: Server, userId: string) =>
  callTool(
    server.url,
    { tool_id: "Example.WhoAmI", input: {}, context: { user_id: userId } },
    { "OXP-API-Key": API_KEY },
  );
const listed = async (server: Server, userId: string) =>
  (await send(`${server.url}/connections?user_id=${userId}`, { headers: asked })).body.items as {
    id: string;
    status: string;
  }[];

/** The provider's log from `from` on, of one endpoint. */
const logged = (from: number, endpoint: string): AuthorizationServerRequest[] =>
  provider.requests.slice(from).filter((entry) => entry.endpoint === endpoint);

/** A GET sent as written (no dot segments resolved, any Host), for targets and hosts `fetch` will not send. */
function rawGet(port: number, target: string, headers: Record<string, string>): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const request = httpRequest({ host: "127.0.0.1", port, path: target, method: "GET", headers }, (response) => {
      let text = "";
      response.setEncoding("utf8");
      response.on("data", (chunk: string) => {
        text += chunk;
      });
      response.on("end", () => {
        let body: unknown;
        try {
          body = JSON.parse(text);
        } catch {
          body = undefined;
        }
        const answered = new Headers();
        for (const [name, value] of Object.entries(response.headers)) {
          if (typeof value === "string") {
            answered.set(name, value);
          }
        }
        resolve({ status: response.statusCode ?? 0, headers: answered, body, text });
      });
    });
    request.on("error", reject);
    request.end();
  });
}

/** A promise a test settles when it likes: work that waits for the test. */
function gate(): { promise: Promise<void>; open(): void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { promise, open };
}

/** Whether `promise` has settled, once what is pending has run. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  void promise.then(
    () => {
      done = true;
    },
    () => {
      done = true;
    },
  );
  for (let turn = 0; turn < 5; turn++) {
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return done;
}

const ports: number[] = [];
/** The server most tests use: its store (a memory store on its clock) is the test's to look at. */
let server: Server;

beforeAll(async () => {
  for (let i = 0; i < 8; i++) {
    ports.push(await freePort());
  }
  provider = await startAuthorizationServer({
    clients: [
      {
        clientId: "oxp-vault",
        clientSecret: "vault-secret",
        redirectUris: ports.map((port) => `http://127.0.0.1:${port}/connections/callback`),
        grantTypes: ["authorization_code", "refresh_token"],
      },
    ],
    users: USERS.map((id) => ({ id, password: `${id}-password`, email: `${id}@example.com` })),
  });
  server = await startToolServer(ports[0] as number);
});
afterAll(async () => {
  await server?.close();
  await provider?.stop();
});

describe("PKCE", () => {
  verifies(
    "connections.flow",
    "the token request carries the verifier whose S256 challenge the authorization request sent",
    async () => {
      const from = provider.requests.length;
      const flow = await start(server, "alice");
      expect(flow.status, flow.text).toBe(201);
      const url = new URL(flow.body.url);
      expect(url.searchParams.get("code_challenge_method")).toBe("S256");
      const challenge = url.searchParams.get("code_challenge") ?? "";
      expect(challenge).toMatch(/^[A-Za-z0-9_-]{43}$/);
      const authorized = await authorize(flow.body.url, "alice");
      const page = await back(authorized.redirectUrl, "alice");
      expect(page.status, page.text).toBe(200);

      const tokens = logged(from, "token");
      expect(tokens).toHaveLength(1);
      const [exchange] = tokens as [AuthorizationServerRequest];
      expect(exchange).toMatchObject({ grantType: "authorization_code", status: 200, error: undefined });
      const verifier = exchange.codeVerifier ?? "";
      // RFC 7636 4.1: 43 to 128 unreserved characters; and the one the challenge was made from.
      expect(verifier).toMatch(/^[A-Za-z0-9._~-]{43,128}$/);
      expect(codeChallengeOf(verifier)).toBe(challenge);
      // The verifier itself went only to the token endpoint, never through the browser.
      expect(flow.body.url).not.toContain(verifier);
      expect(authorized.redirectUrl).not.toContain(verifier);
      expect(await listed(server, "alice")).toEqual([expect.objectContaining({ id: flow.body.id, status: "active" })]);
    },
  );

  verifies(
    "connections.flow",
    "a callback carrying a code obtained in another flow binds nothing: the provider refuses it for this flow's verifier",
    async () => {
      // bob's flow, and mallory's own flow at the same server; mallory puts her code into bob's callback.
      const bobs = await start(server, "bob");
      const mallorys = await start(server, "mallory");
      const bobAuthorized = await authorize(bobs.body.url, "bob");
      const malloryAuthorized = await authorize(mallorys.body.url, "mallory");
      const forged = new URL(bobAuthorized.redirectUrl);
      forged.searchParams.set("code", malloryAuthorized.code as string);

      const from = provider.requests.length;
      const page = await back(forged.href, "bob");
      expect(page.status, page.text).toBe(400);
      expect(page.headers.get("content-type")).toMatch(/^text\/html/);
      expect(page.headers.get("cache-control")).toBe("no-store");
      expect(page.text).toContain("Example Accounts did not connect");
      expect(page.text).not.toContain(malloryAuthorized.code as string);

      // Exchanged once, with bob's flow's verifier, and refused.
      const tokens = logged(from, "token");
      expect(tokens).toHaveLength(1);
      const [refused] = tokens as [AuthorizationServerRequest];
      expect(refused).toMatchObject({ grantType: "authorization_code", status: 400, error: "invalid_grant" });
      expect(codeChallengeOf(refused.codeVerifier ?? "")).toBe(
        new URL(bobs.body.url).searchParams.get("code_challenge"),
      );

      expect(await statusOf(bobs.body.check_url)).toBe("failed");
      expect(await listed(server, "bob")).toEqual([]);
      expect(await server.store?.list(PRINCIPAL, "bob")).toEqual([]);
      // Spent: bob's own code, brought back now, is not exchanged.
      const again = await back(bobAuthorized.redirectUrl, "bob");
      expect(again.status).toBe(400);
      expect(logged(from, "token")).toHaveLength(1);
      const called = await call(server, "bob");
      expectError(called, 400);
      expect(called.body.missing_requirements.authorization).toHaveLength(1);
      for (const secret of [malloryAuthorized.code as string, refused.codeVerifier as string]) {
        expect(server.lines.join("\n")).not.toContain(secret);
      }
    },
  );
});

describe("the redirect URI", () => {
  verifies(
    "connections.flow",
    "the token request's redirect_uri is exactly the authorization request's: the public URL's callback",
    async () => {
      const from = provider.requests.length;
      const flow = await start(server, "carol");
      const expected = `${server.url}/connections/callback`;
      expect(new URL(flow.body.url).searchParams.get("redirect_uri")).toBe(expected);
      const authorized = await authorize(flow.body.url, "carol");
      expect(authorized.redirectUrl.startsWith(`${expected}?`)).toBe(true);
      expect((await back(authorized.redirectUrl, "carol")).status).toBe(200);

      const authorizations = logged(from, "authorization");
      expect(authorizations.length).toBeGreaterThan(0);
      for (const entry of authorizations) {
        expect(entry.redirectUri).toBe(expected);
      }
      const tokens = logged(from, "token");
      expect(tokens).toHaveLength(1);
      expect(tokens[0]).toMatchObject({ grantType: "authorization_code", status: 200, redirectUri: expected });
    },
  );

  verifies(
    "connections.flow",
    "a callback sent to another path or host reaches no flow; the flow still completes at its own redirect URI",
    async () => {
      const flow = await start(server, "dave");
      const authorized = await authorize(flow.body.url, "dave");
      const { search } = new URL(authorized.redirectUrl);
      const cookie = `${SESSION}=dave`;
      const from = provider.requests.length;
      const elsewhere = [
        "/connections/callback/",
        "/connections/callback/x",
        "/connections/Callback",
        "/CONNECTIONS/callback",
        "/connections//callback",
        "/connections/%63allback",
        "/oxp/connections/callback",
        "/callback",
      ];
      for (const path of elsewhere) {
        // No page is served there: the browser, which holds no API key, is asked for one.
        expectError(await rawGet(server.port, `${path}${search}`, { cookie }), 401);
      }
      // The right path under a name that is not the server's: the Host check refuses it before any page.
      const otherHost = await rawGet(server.port, `/connections/callback${search}`, {
        cookie,
        host: `tools.attacker.example:${server.port}`,
      });
      expectError(otherHost, 400);
      expect(otherHost.body.message).toBe("The request's Host does not name this server");

      // None of them reached the flow: nothing was exchanged, it is still pending, and it still completes.
      expect(logged(from, "token")).toHaveLength(0);
      expect(await statusOf(flow.body.check_url)).toBe("pending");
      expect(await listed(server, "dave")).toEqual([]);
      const page = await back(authorized.redirectUrl, "dave");
      expect(page.status, page.text).toBe(200);
      expect(logged(from, "token")).toEqual([
        expect.objectContaining({ redirectUri: `${server.url}/connections/callback`, status: 200 }),
      ]);
      expect(await statusOf(flow.body.check_url)).toBe("completed");
    },
  );
});

describe("the callback's origin", () => {
  /** Fails unless `reply` is the wrong-origin refusal: the project's JSON error, nothing of the callback echoed. */
  const expectWrongOrigin = (reply: Reply, code: string) => {
    expectError(reply, 400);
    expect(reply.body.message).toBe("This callback belongs to another origin of this server");
    expect(reply.headers.get("cache-control")).toBe("no-store");
    expect(reply.text).not.toContain(code);
  };

  verifies(
    ["connections.callback-origin", "connections.flow"],
    "a callback under another name the server answers to is a 400 that spends nothing; at the redirect URI's origin the flow completes",
    async () => {
      const named = await startToolServer(ports[3] as number, { allowedHosts: ["tools.example.test"] });
      try {
        const flow = await start(named, "alice");
        expect(flow.status, flow.text).toBe(201);
        const authorized = await authorize(flow.body.url, "alice");
        expect(new URL(authorized.redirectUrl).origin).toBe(named.url);
        const { search } = new URL(authorized.redirectUrl);
        const code = authorized.code as string;
        const from = provider.requests.length;
        // Every one of these names passes the server's Host check; none is the redirect URI's origin. mallory's
        // browser, had it reached the flow, would have failed the browser check and spent the state.
        const elsewhere: [host: string, cookieUser: string][] = [
          [`tools.example.test:${named.port}`, "alice"],
          [`TOOLS.example.test:${named.port}`, "mallory"],
          [`localhost:${named.port}`, "alice"],
          [`127.0.0.1:${ports[0]}`, "alice"],
          ["127.0.0.1", "alice"],
          [`[::1]:${named.port}`, "mallory"],
        ];
        for (const [host, cookieUser] of elsewhere) {
          const reply = await rawGet(named.port, `/connections/callback${search}`, {
            cookie: `${SESSION}=${cookieUser}`,
            host,
          });
          expectWrongOrigin(reply, code);
        }

        // Nothing was exchanged or decided, and nothing is stored.
        expect(logged(from, "token")).toHaveLength(0);
        expect(await statusOf(flow.body.check_url)).toBe("pending");
        expect(await listed(named, "alice")).toEqual([]);
        expect(await named.store?.list(PRINCIPAL, "alice")).toEqual([]);
        // The same callback at its own origin (the Host the browser sends there) completes the flow.
        const same = await rawGet(named.port, `/connections/callback${search}`, {
          cookie: `${SESSION}=alice`,
          host: `127.0.0.1:${named.port}`,
        });
        expect(same.status, same.text).toBe(200);
        expect(logged(from, "token")).toEqual([
          expect.objectContaining({ redirectUri: `${named.url}/connections/callback`, status: 200 }),
        ]);
        expect(await statusOf(flow.body.check_url)).toBe("completed");
        expect(await listed(named, "alice")).toEqual([expect.objectContaining({ id: flow.body.id, status: "active" })]);
        expect(named.lines.join("\n")).not.toContain(code);
      } finally {
        await named.close();
      }
    },
  );

  verifies(
    "connections.callback-origin",
    "without a public URL the redirect URI is the address the flow was started at: a callback under another name is refused, there it completes",
    async () => {
      const bare = await startToolServer(ports[4] as number, { publicUrl: false });
      try {
        const flow = await start(bare, "bob");
        expect(flow.status, flow.text).toBe(201);
        expect(new URL(flow.body.url).searchParams.get("redirect_uri")).toBe(`${bare.url}/connections/callback`);
        const authorized = await authorize(flow.body.url, "bob");
        const { search } = new URL(authorized.redirectUrl);
        const from = provider.requests.length;
        expectWrongOrigin(
          await rawGet(bare.port, `/connections/callback${search}`, {
            cookie: `${SESSION}=bob`,
            host: `localhost:${bare.port}`,
          }),
          authorized.code as string,
        );
        expect(logged(from, "token")).toHaveLength(0);
        expect(await statusOf(flow.body.check_url)).toBe("pending");

        const page = await back(authorized.redirectUrl, "bob");
        expect(page.status, page.text).toBe(200);
        expect(await statusOf(flow.body.check_url)).toBe("completed");
        expect((await call(bare, "bob")).body.value).toEqual({ status: 200, sub: "bob" });
      } finally {
        await bare.close();
      }
    },
  );
});

describe("callbacks that race", () => {
  verifies(
    "connections.flow",
    "two callbacks for one state at once: the code is exchanged once, one completes, the other is refused",
    async () => {
      const store = server.store as MemoryConnectionStore;
      const flow = await start(server, "erin");
      const authorized = await authorize(flow.body.url, "erin");
      // The first callback waits at the browser check until the second has come in: waiting for the flow's lock,
      // or at the browser check too, for a vault that lets them both through.
      let checks = 0;
      server.beforeBrowserCheck = async () => {
        checks++;
        if (checks === 1) {
          await until(() => checks >= 2 || store.waitingForLock >= 1, { what: "the second callback" });
        }
      };
      const from = provider.requests.length;
      let pages: Reply[];
      try {
        pages = await Promise.all([back(authorized.redirectUrl, "erin"), back(authorized.redirectUrl, "erin")]);
      } finally {
        server.beforeBrowserCheck = undefined;
      }
      expect(pages.map((page) => page.status).sort()).toEqual([200, 400]);
      expect(pages.find((page) => page.status === 400)?.text).toContain("This link was used already");
      const tokens = logged(from, "token");
      expect(tokens).toHaveLength(1);
      expect(tokens[0]).toMatchObject({ grantType: "authorization_code", status: 200 });

      expect(await statusOf(flow.body.check_url)).toBe("completed");
      const records = await store.list(PRINCIPAL, "erin");
      expect(records).toHaveLength(1);
      expect(records[0]).toMatchObject({ id: flow.body.id, status: "active", version: 1 });
      // The tokens stored are good at the provider (a code redeemed twice would have revoked them there).
      expect((await call(server, "erin")).body.value).toEqual({ status: 200, sub: "erin" });
    },
  );

  verifies(
    ["connections.flow", "connections.browser-bound"],
    "the user's callback racing another browser's for the same state: the first decision stands, and agrees with the store",
    async () => {
      const store = server.store as MemoryConnectionStore;
      const flow = await start(server, "frank");
      const authorized = await authorize(flow.body.url, "frank");
      let checks = 0;
      server.beforeBrowserCheck = async () => {
        checks++;
        if (checks === 1) {
          await until(() => checks >= 2 || store.waitingForLock >= 1, { what: "the other browser's callback" });
        }
      };
      let mine: Reply;
      let theirs: Reply;
      try {
        const first = back(authorized.redirectUrl, "frank");
        await until(() => checks === 1, { what: "frank's callback at the browser check" });
        // mallory was sent the link and opens it while frank's callback is under way.
        [mine, theirs] = await Promise.all([first, back(authorized.redirectUrl, "mallory")]);
      } finally {
        server.beforeBrowserCheck = undefined;
      }
      expect(mine.status, mine.text).toBe(200);
      expect(theirs.status, theirs.text).toBe(400);
      expect(theirs.text).toContain("This link was used already");
      expect(await statusOf(flow.body.check_url)).toBe("completed");
      expect(await store.list(PRINCIPAL, "frank")).toEqual([
        expect.objectContaining({ id: flow.body.id, status: "active" }),
      ]);
      expect(await store.list(PRINCIPAL, "mallory")).toEqual([]);
    },
  );

  verifies(
    "connections.flow",
    "a callback whose flow another callback holds past the time limit is refused, on the server's clock",
    async () => {
      // The vault's own store: it must follow the server's clock, which only the test moves.
      const own = await startToolServer(ports[1] as number, { ownStore: false });
      const held = gate();
      let checks = 0;
      own.beforeBrowserCheck = async () => {
        checks++;
        if (checks === 1) {
          await held.promise;
        }
      };
      try {
        const flow = await start(own, "gina");
        const authorized = await authorize(flow.body.url, "gina");
        const first = back(authorized.redirectUrl, "gina");
        await until(() => checks === 1, { what: "the first callback at the browser check" });
        const timers = own.clock.pending;
        const second = back(authorized.redirectUrl, "gina");
        // The second callback waits for the flow's lock: its time limit is a timer of the server's clock.
        await own.clock.untilPending(timers + 1);
        await own.clock.advance(CALLBACK_LOCK_MS - 1);
        expect(await settled(second)).toBe(false);
        await own.clock.advance(1);
        const refused = await second;
        expect(refused.status, refused.text).toBe(409);
        expect(refused.headers.get("content-type")).toMatch(/^text\/html/);
        expect(refused.text).toContain("This link is being used already");
        expect(checks).toBe(1);

        held.open();
        const page = await first;
        expect(page.status, page.text).toBe(200);
        expect(await statusOf(flow.body.check_url)).toBe("completed");
        expect(await listed(own, "gina")).toEqual([expect.objectContaining({ id: flow.body.id, status: "active" })]);
        expect(own.clock.pending).toBe(timers);
      } finally {
        held.open();
        await own.close();
      }
    },
  );
});

describe("the refresh lock's time limit", () => {
  verifies(
    "connections.at-call-time",
    "a call whose connection's lock is held past the refresh's limit is a 503, and is served once the lock is free",
    async () => {
      const own = await startToolServer(ports[2] as number);
      const store = own.store as MemoryConnectionStore;
      const held = gate();
      try {
        const flow = await start(own, "alice");
        expect((await back((await authorize(flow.body.url, "alice")).redirectUrl, "alice")).status).toBe(200);
        // The provider's tokens live 300 s: 250 s on, a call refreshes first, under the connection's lock.
        await own.clock.advance(250_000);
        const holding = store.withLock(flow.body.id, 600_000, () => held.promise);
        const calling = call(own, "alice");
        await until(() => store.waitingForLock === 1, { what: "the call waiting for the lock" });
        await own.clock.advance(15_000);
        const busy = await calling;
        expectError(busy, 503);
        expect(Number(busy.headers.get("retry-after"))).toBeGreaterThan(0);
        held.open();
        await holding;
        const before = provider.count("token", "refresh_token");
        expect((await call(own, "alice")).body.value).toEqual({ status: 200, sub: "alice" });
        expect(provider.count("token", "refresh_token") - before).toBe(1);
      } finally {
        held.open();
        await own.close();
      }
    },
  );
});

describe("the vault's bounds, met by completed flows", () => {
  /** Runs a flow of `user`'s to its end at the provider: the callback URL, not yet opened. */
  const authorizedFlow = async (on: Server, user: string) => {
    const flow = await start(on, user);
    expect(flow.status, flow.text).toBe(201);
    return {
      ...(flow.body as { id: string; url: string; check_url: string }),
      ...(await authorize(flow.body.url, user)),
    };
  };
  /** Log lines at error level or worse (pino's 50): a refusal at a bound is no server failure. */
  const errorsIn = (on: Server) => on.lines.filter((line) => (JSON.parse(line) as { level: number }).level >= 50);

  const stores: [label: string, port: () => number, ownStore: ServerChoices["ownStore"]][] = [
    ["in the store the vault makes with the bound", () => ports[5] as number, false],
    [
      "in a store given larger bounds than the vault's",
      () => ports[6] as number,
      (clock) => new MemoryConnectionStore({ clock }),
    ],
  ];
  for (const [label, port, ownStore] of stores) {
    verifies(
      ["connections.bounded", "connections.flow"],
      `a user filled to the bound by completed flows: POST is a 400, a flow started before completes to a 400 page without its code exchanged, and nothing past the bound is kept (${label})`,
      async () => {
        const tight = await startToolServer(port(), { ownStore, maxConnectionsPerUser: 2 });
        try {
          const first = await authorizedFlow(tight, "carol");
          expect((await back(first.redirectUrl, "carol")).status).toBe(200);
          // Two flows started while there is room for one more, both signed in to at the provider.
          const second = await authorizedFlow(tight, "carol");
          const third = await authorizedFlow(tight, "carol");
          expect((await back(second.redirectUrl, "carol")).status).toBe(200);

          // At the bound a new flow is refused before the user signs in.
          const refused = await start(tight, "carol");
          expectError(refused, 400);
          expect(refused.body.message).toBe("This user holds the most connections allowed");

          // The flow started before comes back, and binds nothing: its page says why, its check_url says failed.
          const from = provider.requests.length;
          const page = await back(third.redirectUrl, "carol");
          expect(page.status, page.text).toBe(400);
          expect(page.headers.get("content-type")).toMatch(/^text\/html/);
          expect(page.text).toContain("No room for another connection");
          expect(page.text).toContain("Remove a connection in your app, then start again.");
          expect(await statusOf(third.check_url)).toBe("failed");
          // Its code was not exchanged: the provider issued no tokens the vault could not keep.
          expect(logged(from, "token")).toHaveLength(0);
          const held = [second.id, first.id].sort();
          expect((await listed(tight, "carol")).map((connection) => connection.id).sort()).toEqual(held);
          if (tight.store) {
            expect((await tight.store.list(PRINCIPAL, "carol")).map((record) => record.id).sort()).toEqual(held);
          }
          // Decided: brought back again it is used, and still nothing is exchanged.
          const again = await back(third.redirectUrl, "carol");
          expect(again.status).toBe(400);
          expect(again.text).toContain("This link was used already");
          expect(logged(from, "token")).toHaveLength(0);

          // The connections held serve calls; one deleted makes room, and the next flow completes.
          expect((await call(tight, "carol")).body.value).toEqual({ status: 200, sub: "carol" });
          const deleted = await send(`${tight.url}/connections/${first.id}?user_id=carol`, {
            method: "DELETE",
            headers: asked,
          });
          expect(deleted.status).toBe(204);
          const fourth = await authorizedFlow(tight, "carol");
          expect((await back(fourth.redirectUrl, "carol")).status).toBe(200);
          expect(await statusOf(fourth.check_url)).toBe("completed");
          expect((await listed(tight, "carol")).map((connection) => connection.id).sort()).toEqual(
            [second.id, fourth.id].sort(),
          );
          expect(errorsIn(tight)).toEqual([]);
        } finally {
          await tight.close();
        }
      },
    );
  }

  verifies(
    "connections.bounded",
    "a flow completed when the vault is full binds nothing: a 503 page, check_url failed, and the tokens the provider gave revoked there",
    async () => {
      const full = await startToolServer(ports[7] as number, {
        ownStore: (clock) => new MemoryConnectionStore({ clock, maxTotal: 2 }),
      });
      const store = full.store as MemoryConnectionStore;
      try {
        for (const user of ["alice", "bob"]) {
          expect((await back((await authorizedFlow(full, user)).redirectUrl, user)).status).toBe(200);
        }
        // dave is far from his own bound: his flow starts, and meets the store's bound in all as it is kept.
        const daves = await authorizedFlow(full, "dave");
        const from = provider.requests.length;
        const page = await back(daves.redirectUrl, "dave");
        expect(page.status, page.text).toBe(503);
        expect(page.headers.get("content-type")).toMatch(/^text\/html/);
        expect(page.text).toContain("No room for another connection");
        expect(page.text).toContain("Try again later.");
        expect(await statusOf(daves.check_url)).toBe("failed");
        // The code was exchanged, and what the provider gave for it is revoked there rather than left live.
        expect(logged(from, "token")).toEqual([
          expect.objectContaining({ grantType: "authorization_code", status: 200 }),
        ]);
        expect(logged(from, "revocation")).toEqual([expect.objectContaining({ status: 200 })]);
        expect(await listed(full, "dave")).toEqual([]);
        expect(await store.list(PRINCIPAL, "dave")).toEqual([]);
        expect(await store.list(PRINCIPAL, "alice")).toHaveLength(1);
        expect(await store.list(PRINCIPAL, "bob")).toHaveLength(1);
        const called = await call(full, "dave");
        expectError(called, 400);
        expect(called.body.missing_requirements.authorization).toHaveLength(1);
        // The operator is told; no error, and no stack, is logged for it.
        expect(full.lines.some((line) => line.includes("the connection store holds the most connections it may"))).toBe(
          true,
        );
        expect(errorsIn(full)).toEqual([]);
      } finally {
        await full.close();
      }
    },
  );
});

describe("MemoryConnectionStore.withLock's time limit", () => {
  it("gives up after timeoutMs on its clock while another caller holds the lock, and the queue goes on", async () => {
    const clock = new ManualClock();
    const store = new MemoryConnectionStore({ clock });
    const held = gate();
    const holding = store.withLock("conn-1", 60_000, async () => {
      await held.promise;
      return "held";
    });
    let ran = false;
    const waiter = store.withLock("conn-1", 1_000, async () => {
      ran = true;
    });
    const outcome = waiter.then(
      () => undefined,
      (error: unknown) => error,
    );
    const third = store.withLock("conn-1", 60_000, async () => "third");
    expect(store.waitingForLock).toBe(2);
    expect(clock.pending).toBe(2);
    // Another connection's lock is another lock.
    expect(await store.withLock("conn-2", 1, async () => "not blocked")).toBe("not blocked");

    await clock.advance(999);
    expect(await settled(outcome)).toBe(false);
    await clock.advance(1);
    const error = await outcome;
    expect(error).toBeInstanceOf(ConnectionLockTimeoutError);
    expect(error).toMatchObject({ name: "ConnectionLockTimeoutError", connectionId: "conn-1", timeoutMs: 1_000 });
    expect(ran).toBe(false);
    expect(store.waitingForLock).toBe(1);
    // The caller behind the one that gave up keeps waiting for the holder, then gets its turn.
    expect(await settled(third)).toBe(false);
    held.open();
    expect(await holding).toBe("held");
    expect(await third).toBe("third");
    expect(clock.pending).toBe(0);
    expect(store.waitingForLock).toBe(0);
    // Free again: a caller gets it at once, with no time passing.
    expect(await store.withLock("conn-1", 1, async () => "free")).toBe("free");
  });

  it("waits for a holder that lets go within the limit, and clears its timer", async () => {
    const clock = new ManualClock();
    const store = new MemoryConnectionStore({ clock });
    const held = gate();
    const holding = store.withLock("conn-1", 1_000, () => held.promise);
    const waiter = store.withLock("conn-1", 1_000, async () => "mine");
    await clock.advance(999);
    held.open();
    await holding;
    expect(await waiter).toBe("mine");
    expect(clock.pending).toBe(0);
    // A holder's failure lets go too.
    await expect(
      store.withLock("conn-1", 1_000, async () => {
        throw new Error("refresh failed");
      }),
    ).rejects.toThrow("refresh failed");
    expect(await store.withLock("conn-1", 1_000, async () => "after")).toBe("after");
  });

  it("refuses a time limit that is not a positive number of milliseconds", async () => {
    const store = new MemoryConnectionStore({ clock: new ManualClock() });
    for (const timeoutMs of [0, -1, Number.NaN, Number.POSITIVE_INFINITY]) {
      await expect(store.withLock("conn-1", timeoutMs, async () => "ran")).rejects.toBeInstanceOf(TypeError);
    }
  });
});
