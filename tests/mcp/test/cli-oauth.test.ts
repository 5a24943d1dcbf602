// `otc mcp serve --transport http --oauth-issuer` in-process, against a real authorization server (oidc-provider): its usage errors, the metadata, the challenge, and a call made for the token's user.
import { mcpCommand } from "@otc/cli";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { freePort } from "@otc/test-helpers/free-port";
import { type AuthorizationServer, startAuthorizationServer } from "@otc/test-helpers/oidc-provider";
import { until } from "@otc/test-helpers/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const API_KEY = "the-command-s-own-oxp-api-key";

const whoAmI = defineTool({
  toolkit: "Account",
  name: "WhoAmI",
  version: "1.0.0",
  description: "Says which user the call is for.",
  inputSchema: { type: "object", properties: {} },
  outputSchema: { type: "object" },
  requirements: { user_id: true },
  run: (_input, ctx) => ({ user: ctx.userId ?? null }),
});

/** Captured output of one run. */
function io(env: Record<string, string | undefined> = {}) {
  const out = { stdout: "", stderr: "" };
  return {
    out,
    io: {
      stdout: (text: string) => {
        out.stdout += text;
      },
      stderr: (text: string) => {
        out.stderr += text;
      },
      env,
    },
  };
}

let as: AuthorizationServer;
let oxp: RunningServer;
let port: number;
let endpoint: string;

beforeAll(async () => {
  port = await freePort();
  endpoint = `http://127.0.0.1:${port}/mcp`;
  as = await startAuthorizationServer({ resources: [{ url: endpoint, scopes: ["oxp:tools:read", "oxp:tools:call"] }] });
  oxp = await listen(createServer({ tools: [whoAmI], logger: false, auth: { apiKeys: [API_KEY] } }), { port: 0 });
});
afterAll(async () => {
  await oxp?.close();
  await as?.stop();
});

describe("otc mcp serve --oauth-issuer", () => {
  it.each([
    [["serve", "--oauth-issuer", "https://as.example"], /--oauth-issuer needs --transport http/],
    [["serve", "--transport", "http", "--resource", "https://mcp.example/mcp"], /--resource goes with --oauth-issuer/],
    [["serve", "--transport", "http", "--oauth-issuer", "as.example"], /--oauth-issuer must be an http/],
    [
      [
        "serve",
        "--transport",
        "http",
        "--oauth-issuer",
        "https://as.example",
        "--http-token",
        "a-token-long-enough-for-http",
      ],
      /--oauth-issuer or an HTTP token/,
    ],
    [
      ["serve", "--transport", "http", "--oauth-issuer", "https://as.example", "--user-id", "bob"],
      /--user-id does not go with --oauth-issuer/,
    ],
    [["serve", "--transport", "http", "--oauth-issuer", "https://as.example", "--host", "0.0.0.0"], /give --resource/],
  ])("refuses %j with a usage error", async (argv, message) => {
    const run = io();
    expect(await mcpCommand(argv, run.io)).toBe(2);
    expect(run.out.stderr).toMatch(message);
  });

  it("serves the metadata, challenges a request without a token, and calls for the token's user with its own key", async () => {
    const run = io({ OXP_API_KEY: API_KEY, OXP_URL: oxp.url });
    const stop = new AbortController();
    const exit = mcpCommand(
      ["serve", "--transport", "http", "--port", String(port), "--oauth-issuer", as.issuer],
      run.io,
      { signal: stop.signal },
    );
    try {
      const metadataUrl = `http://127.0.0.1:${port}/.well-known/oauth-protected-resource/mcp`;
      await until(() => run.out.stderr.includes(metadataUrl), { what: "otc mcp to print its metadata URL" });
      expect(await (await fetch(metadataUrl)).json()).toMatchObject({
        resource: endpoint,
        authorization_servers: [as.issuer],
      });

      const call = (token?: string) =>
        fetch(endpoint, {
          method: "POST",
          headers: {
            "content-type": "application/json",
            accept: "application/json, text/event-stream",
            ...(token ? { authorization: `Bearer ${token}` } : {}),
          },
          body: JSON.stringify({
            jsonrpc: "2.0",
            id: 1,
            method: "tools/call",
            params: { name: "Account_WhoAmI", arguments: {} },
          }),
        });
      const refused = await call();
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toContain(`resource_metadata="${metadataUrl}"`);

      const token = await as.mintAccessToken({ sub: "alice", scope: "oxp:tools:call" });
      const answer = await call(token);
      expect(answer.status).toBe(200);
      expect(await answer.text()).toContain('"structuredContent":{"user":"alice"}');
    } finally {
      stop.abort();
      expect(await exit).toBe(0);
    }
    expect(run.out.stderr).not.toContain(API_KEY);
  });
});
