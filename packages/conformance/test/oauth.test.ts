// The oauth group against a small server (it passes where the server is right, is not applicable where it offers no oauth, and fails each deliberate bug), and against @otc/server with a real authorization server issuing the tokens.
import { once } from "node:events";
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import {
  type Fixture,
  main,
  type OAuthTokens,
  type Report,
  type RunOptions,
  runConformance,
  scenarios,
} from "@otc/conformance";
import { createFetchHandler } from "@otc/server/fetch";
import { type AdapterOptions, createHandler, defineTool, listen } from "@otc/server/node";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { bearerChallenge, fixedTokens, subjectOf } from "../src/scenarios/oauth.js";
import { type OAuthBug, type OAuthServerOptions, signToken, startOAuthServer } from "./oauth-server.js";

const SECRET = "oauth-server-token-secret-0123456789abcdef";

const FIXTURE: Fixture = {
  name: "oauth-server",
  safeCall: { tool_id: "Calc.Add@1.0.0", input: { a: 2, b: 3 }, value: { sum: 5 } },
};

const GROUP = scenarios.filter((scenario) => scenario.id.startsWith("oauth.")).map((scenario) => scenario.id);
/** The scenarios that send no access token of the kit's: they run without the oauth option. */
const WITHOUT_TOKENS = ["oauth.metadata", "oauth.discovery", "oauth.challenge", "oauth.challenge.invalid-token"];

/** The small server's tokens: signed as asked, for a client whose `sub` is agent-7. */
const fakeTokens: OAuthTokens = {
  token: async (scopes) => signToken(SECRET, { sub: "agent-7", scope: scopes.join(" ") }),
};

async function check(
  server: Partial<OAuthServerOptions>,
  kit: Partial<RunOptions> = {},
  tokens: OAuthTokens | null = fakeTokens,
): Promise<Report> {
  const running = await startOAuthServer({ secret: SECRET, ...server });
  try {
    return await runConformance({
      url: running.url,
      only: ["oauth."],
      fixture: FIXTURE,
      ...(tokens ? { oauth: tokens } : {}),
      ...kit,
    });
  } finally {
    await running.close();
  }
}

const withStatus = (report: Report, status: string) =>
  report.results.filter((result) => result.status === status).map((result) => result.id);

describe("the oauth group", () => {
  it("runs after the tasks group and before the hostile one, whose checks read every answer", () => {
    const ids = scenarios.map((scenario) => scenario.id);
    expect(GROUP.length).toBeGreaterThanOrEqual(10);
    expect(ids.indexOf("tasks.unknown")).toBeLessThan(ids.indexOf("oauth.metadata"));
    expect(ids.indexOf("oauth.user-is-subject")).toBeLessThan(ids.indexOf("errors.no-leaks"));
  });

  it("passes every scenario on a right server", async () => {
    const report = await check({}, { only: ["oauth.", "errors.no-leaks"] });
    expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
    expect(withStatus(report, "pass")).toEqual([...GROUP, "errors.no-leaks"]);
  });

  it("reports every scenario as not applicable where discovery lists no oauth", async () => {
    const report = await check({ oauth: false });
    expect(withStatus(report, "skip")).toEqual(GROUP);
    for (const result of report.results) {
      expect(result.reason, result.id).toBe("not applicable: the server's discovery document does not list 'oauth'");
    }
  });

  it("skips the scenarios that send tokens when the kit has none, and runs the others", async () => {
    const report = await check({}, {}, null);
    expect(withStatus(report, "pass")).toEqual(WITHOUT_TOKENS);
    for (const result of report.results.filter((entry) => entry.status === "skip")) {
      expect(result.reason, result.id).toBe(
        "no access tokens given (the oauth option, or --oauth-token-read/-call/-all)",
      );
    }
  });

  it("skips a scenario whose token the kit was not given, and runs those it can", async () => {
    const read = signToken(SECRET, { sub: "agent-7", scope: "oxp:tools:read" });
    const report = await check({}, {}, fixedTokens({ read }));
    expect(withStatus(report, "pass")).toEqual([...WITHOUT_TOKENS, "oauth.scopes.read"]);
    const reasons = Object.fromEntries(report.results.map((result) => [result.id, result.reason]));
    expect(reasons["oauth.scopes.call"]).toBe("no access token given for the scopes oxp:tools:call");
    expect(reasons["oauth.user-is-subject"]).toBe("no access token given for the scopes oxp:tools:call");
    expect(reasons["oauth.catalog-by-scope"]).toBe(
      "no access token given for the scopes oxp:tools:read oxp:tools:call mail:send",
    );
  });

  it("without a safe call, probes the scopes with a wrong input and skips the user scenario", async () => {
    const { safeCall: _safe, ...noSafeCall } = FIXTURE;
    const report = await check({}, { fixture: noSafeCall });
    expect(withStatus(report, "pass")).toEqual(GROUP.filter((id) => id !== "oauth.user-is-subject"));
    expect(report.results.find((result) => result.id === "oauth.user-is-subject")).toMatchObject({
      status: "skip",
      reason: "the fixture names no safe call",
    });
  });

  // Each bug, the one scenario that must fail on it, and what it says.
  const caught: [OAuthBug, string, RegExp][] = [
    ["metadata-needs-auth", "oauth.metadata", /without credentials answered 401: the metadata is never authenticated/],
    [
      "metadata-not-path-inserted",
      "oauth.metadata",
      /GET \/\.well-known\/oauth-protected-resource\/oxp .* answered 401/,
    ],
    [
      "discovery-wrong-url",
      "oauth.discovery",
      /resource_metadata is https:\/\/tools\.oauth-server\.test\/\.well-known\/oauth-protected-resource, where/,
    ],
    [
      "challenge-without-metadata",
      "oauth.challenge",
      /GET \/tools without credentials: the challenge's resource_metadata is missing/,
    ],
    [
      "challenge-wrong-scope",
      "oauth.challenge",
      /POST \/tools\/call without credentials: the challenge's scope is "oxp:tools:read", where the route needs "oxp:tools:call"/,
    ],
    ["invalid-token-unnamed", "oauth.challenge.invalid-token", /the challenge's error is missing, not invalid_token/],
    ["accepts-unsigned", "oauth.challenge.invalid-token", /an unsigned \(alg none\) token .*: expected 401, got 200/],
    [
      "list-scope-401",
      "oauth.scopes.call",
      /GET \/tools with a token of oxp:tools:call alone answered 401: a valid token with too few scopes is a 403/,
    ],
    [
      "call-without-scope",
      "oauth.scopes.read",
      /POST \/tools\/call Calc\.Add@1\.0\.0 with a token of oxp:tools:read alone: expected 403, got 200/,
    ],
    ["only-missing-scope", "oauth.scopes.tool", /the challenge's scope "mail:send" leaves out oxp:tools:call/],
    [
      "lists-uncallable",
      "oauth.catalog-by-scope",
      /lists Mail\.Send@1\.0\.0 \(requires mail:send\), which the token cannot call/,
    ],
    ["list-not-private", "oauth.catalog-by-scope", /Cache-Control is \(none\), not private/],
    [
      "scopes-without-header",
      "oauth.required-scopes.listed",
      /without OXP-Extensions lists required_scopes \(Mail\.Send@1\.0\.0\)/,
    ],
    [
      "user-mismatch-accepted",
      "oauth.user-is-subject",
      /with context\.user_id 'agent-7-oxp-conformance-other', not the token's sub 'agent-7' answered 200/,
    ],
  ];
  it.concurrent.each(caught)("catches the bug %s in %s, and only there", async (bug, id, reason) => {
    const report = await check({ bugs: [bug] });
    expect(withStatus(report, "fail")).toEqual([id]);
    const result = report.results.find((entry) => entry.id === id);
    expect(result?.reason).toMatch(reason);
    expect(withStatus(report, "pass")).toEqual(GROUP.filter((entry) => entry !== id));
  });
});

describe("the oauth group against @otc/server, with oidc-provider issuing the tokens", () => {
  /** The tool server's canonical URL, with a path: tokens are minted for it; no request goes there. */
  const RESOURCE = "https://tools.conformance.test/oxp";
  let as: AuthorizationServer;
  const agentTokens: OAuthTokens = {
    token: (scopes) =>
      as.clientCredentialsToken({
        clientId: "agent",
        clientSecret: "agent-secret",
        resource: RESOURCE,
        scope: scopes.join(" "),
      }),
  };

  const add = defineTool({
    toolkit: "Calc",
    name: "Add",
    version: "1.0.0",
    description: "Adds two numbers.",
    inputSchema: {
      type: "object",
      properties: { a: { type: "number", description: "A." }, b: { type: "number", description: "B." } },
      required: ["a", "b"],
      additionalProperties: false,
    },
    outputSchema: { type: "number" },
    run: ({ a, b }: { a: number; b: number }) => a + b,
  });
  const mail = defineTool({
    toolkit: "Mail",
    name: "Send",
    version: "1.0.0",
    description: "Sends an email.",
    inputSchema: {
      type: "object",
      properties: { to: { type: "string", description: "Who gets it." } },
      required: ["to"],
      additionalProperties: false,
    },
    outputSchema: { type: "object" },
    requiredScopes: ["mail:send"],
    run: ({ to }: { to: string }) => ({ sent: to }),
  });
  const fixture: Fixture = { name: "oauth", safeCall: { tool_id: "Calc.Add@1.0.0", input: { a: 2, b: 3 }, value: 5 } };
  const options = (): AdapterOptions => ({
    tools: [add, mail],
    logger: false,
    validateResponses: true,
    auth: { oauth: { authorizationServers: [as.issuer], resource: RESOURCE } },
  });

  beforeAll(async () => {
    as = await startAuthorizationServer({
      resources: [{ url: RESOURCE, scopes: ["oxp:tools:read", "oxp:tools:call", "mail:send"] }],
      clients: [{ clientId: "agent", clientSecret: "agent-secret", grantTypes: ["client_credentials"] }],
    });
  });
  afterAll(async () => {
    await as?.stop();
  });

  /** The server on the node:http adapter, or its fetch handler behind a small node:http bridge. */
  async function startToolServer(adapter: "node" | "fetch"): Promise<{ url: string; close(): Promise<void> }> {
    if (adapter === "node") {
      return listen(createHandler(options()), { port: 0 });
    }
    const handler = createFetchHandler(options());
    const server: Server = createServer(async (req, res) => {
      const chunks: Buffer[] = [];
      for await (const chunk of req) {
        chunks.push(chunk as Buffer);
      }
      const body = chunks.length > 0 ? Buffer.concat(chunks) : undefined;
      const request = new Request(`http://${req.headers.host}${req.url}`, {
        method: req.method,
        headers: Object.entries(req.headers).flatMap(([name, value]) =>
          value === undefined ? [] : [[name, Array.isArray(value) ? value.join(", ") : value] as [string, string]],
        ),
        ...(body && req.method !== "GET" && req.method !== "HEAD" ? { body } : {}),
      });
      const response = await handler(request, { remoteAddress: req.socket.remoteAddress });
      res.writeHead(response.status, Object.fromEntries(response.headers));
      res.end(Buffer.from(await response.arrayBuffer()));
    });
    server.listen(0, "127.0.0.1");
    await once(server, "listening");
    return {
      url: `http://127.0.0.1:${(server.address() as AddressInfo).port}`,
      close: () =>
        new Promise((resolve) => {
          server.closeAllConnections();
          server.close(() => resolve());
        }),
    };
  }

  it.each(["node", "fetch"] as const)("passes every scenario on the %s adapter", async (adapter) => {
    const running = await startToolServer(adapter);
    try {
      const report = await runConformance({
        url: running.url,
        only: ["oauth.", "errors.no-leaks"],
        fixture,
        oauth: agentTokens,
      });
      expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
      expect(withStatus(report, "pass")).toEqual([...GROUP, "errors.no-leaks"]);
      // Each set of scopes was asked for once: read, call, every scope, and call with the safe call's (none).
      expect(as.count("token", "client_credentials")).toBeGreaterThanOrEqual(3);
    } finally {
      await running.close();
      as.clearRequests();
    }
  });

  it("asks the authorization server once per set of scopes in a run", async () => {
    const running = await startToolServer("node");
    try {
      await runConformance({ url: running.url, only: ["oauth."], fixture, oauth: agentTokens });
      // oxp:tools:read, oxp:tools:call, read + call (the kit's own requests), and read + call + mail:send.
      expect(as.count("token", "client_credentials")).toBe(4);
    } finally {
      await running.close();
      as.clearRequests();
    }
  });

  it("checks a server that takes access tokens alone with a token on every request of the kit", async () => {
    const running = await startToolServer("node");
    try {
      const only = ["tools.list", "tools.definitions", "call.success", "call.unknown-tool", "extensions.off."];
      const report = await runConformance({ url: running.url, only, fixture, oauth: agentTokens });
      expect(report.results.filter((result) => result.status !== "pass")).toEqual([]);
      expect(report.results.length).toBeGreaterThanOrEqual(6);
      // Without the tokens, the same scenarios meet 401s.
      const without = await runConformance({ url: running.url, only, fixture });
      expect(withStatus(without, "fail")).toContain("tools.list");
    } finally {
      await running.close();
      as.clearRequests();
    }
  });

  it("runs from the command line with fixed tokens", async () => {
    const running = await startToolServer("node");
    try {
      const [read, call, all] = await Promise.all(
        [["oxp:tools:read"], ["oxp:tools:call"], ["oxp:tools:read", "oxp:tools:call", "mail:send"]].map((scopes) =>
          agentTokens.token(scopes),
        ),
      );
      const lines: string[] = [];
      const code = await main(
        [
          "--url",
          running.url,
          "--only",
          "oauth.",
          "--oauth-token-read",
          `${read}`,
          "--oauth-token-call",
          `${call}`,
          "--oauth-token-all",
          `${all}`,
        ],
        (text) => lines.push(text),
      );
      const output = lines.join("");
      expect(code, output).toBe(0);
      // No fixture fits this catalog: the user scenario is the one left out.
      expect(output).toContain("SKIP oauth.user-is-subject");
      expect(output).toContain(`${GROUP.length - 1} passed, 0 failed, 1 skipped`);
    } finally {
      await running.close();
      as.clearRequests();
    }
  });
});

describe("bearerChallenge", () => {
  it.each([
    ["a quoted parameter", 'Bearer realm="x"', { realm: "x" }],
    [
      "several, with spaces around commas and a token value",
      'Bearer error="insufficient_scope" , scope="a b",resource_metadata=https://x/y',
      { error: "insufficient_scope", scope: "a b", resource_metadata: "https://x/y" },
    ],
    ["an escaped quote", 'Bearer error_description="say \\"hi\\""', { error_description: 'say "hi"' }],
    ["a name in another case", 'bearer Scope="a"', { scope: "a" }],
    ["Bearer after another scheme", 'OXP-API-Key realm="k", Bearer scope="a"', { scope: "a" }],
    ["a challenge after it not read", 'Bearer scope="a", Basic realm="b"', { scope: "a" }],
    ["no parameters", "Bearer", {}],
  ])("reads %s", (_case, value, params) => {
    expect(bearerChallenge(value)).toEqual(params);
  });

  it.each([
    ["no header", undefined],
    ["another scheme", 'Basic realm="x"'],
    ["a scheme that starts like it", "Bearerish x=1"],
  ])("finds no Bearer challenge in %s", (_case, value) => {
    expect(bearerChallenge(value)).toBeUndefined();
  });
});

describe("subjectOf", () => {
  it("reads a JWT's sub without verifying it, and nothing else", () => {
    expect(subjectOf(signToken(SECRET, { sub: "agent-7", scope: "" }))).toBe("agent-7");
    expect(subjectOf("not-a-jwt")).toBeUndefined();
    expect(subjectOf("a.e30.b")).toBeUndefined();
  });
});
