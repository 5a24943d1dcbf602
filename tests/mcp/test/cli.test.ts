// `otc mcp` (packages/cli/src/mcp-command.ts) in-process: usage errors, and `serve --transport http` until stopped.

import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo } from "node:net";
import { mcpCommand } from "@otc/cli";
import { createDemoApp } from "@otc/demo/app";
import { createServer as createOxpServer, defineTool, listen, type RunningServer } from "@otc/server";
import { until } from "@otc/test-helpers/until";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  API_KEY,
  connectHttp,
  connectHttpV2,
  type Exchange,
  MODERN_REVISION,
  mcpClient,
  mcpClientV2,
  startDemo,
} from "./harness.js";

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

/** Waits until a run has printed `pattern` on stderr (where it serves, once it listens): an event, not a delay. */
const printed = (out: { stderr: string }, pattern: RegExp) =>
  until(() => pattern.test(out.stderr), { what: `otc mcp to print ${pattern}` });

/** The claims of a JWT, read without checking its signature (the test only looks at what was sent). */
const decodeJwt = (token: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString());

let demo: RunningServer;
beforeAll(async () => {
  demo = await startDemo();
});
afterAll(() => demo.close());

describe("otc mcp", () => {
  it.each([
    [[], /missing subcommand/],
    [["start"], /unknown subcommand 'start'/],
    [["serve", "extra"], /unexpected argument 'extra'/],
    [["serve", "--transport", "carrier-pigeon"], /--transport must be stdio or http/],
    [["serve", "--tool-versions", "some"], /--tool-versions must be latest or all/],
    [["serve", "--url", "localhost:8080"], /--url must be an http/],
    [["serve", "--port", "3000"], /--port, --host and --http-token need --transport http/],
    [["serve", "--http-token", "a-token-long-enough-for-http"], /--http-token need --transport http/],
    [["serve", "--transport", "http", "--http-token", "short"], /at least 16 characters/],
    [["serve", "--transport", "http", "--host", "0.0.0.0"], /reachable from other machines: give a token/],
    [["serve", "--transport", "http", "--host", "::"], /OXP_MCP_TOKEN/],
    [["serve", "--transport", "http", "--port", "99999"], /--port must be a port number/],
    [["serve", "--api-key", "k", "--jwt-secret", "s"], /not both/],
    [["serve", "--nope"], /Unknown option '--nope'/],
  ])("refuses %j with a usage error", async (argv, message) => {
    const run = io();
    expect(await mcpCommand(argv, run.io)).toBe(2);
    expect(run.out.stderr).toMatch(message);
    expect(run.out.stdout).toBe("");
  });

  it.each([
    [
      ["--url", "http://ann:s3cr3t-Pa55@127.0.0.1:8080"],
      {},
      /--url must not hold credentials/,
      "http://ann:***@127.0.0.1:8080",
    ],
    [["--url", "ann:s3cr3t-Pa55@oxp.example:8080"], {}, /--url must be an http/, "ann:***@oxp.example:8080"],
    [["--url", "ftp://ann:s3cr3t-Pa55@x/y@z"], {}, /--url must be an http/, "ftp://ann:***@z"],
    [[], { OXP_URL: "https://ann:s3cr3t-Pa55@oxp.example" }, /OXP_URL must not hold credentials/, "ann:***@"],
  ])("masks the password of %j %j in its usage error", async (args, env, message, masked) => {
    const run = io(env);
    expect(await mcpCommand(["serve", ...args], run.io)).toBe(2);
    expect(run.out.stderr).toMatch(message);
    expect(run.out.stderr).toContain(masked);
    expect(run.out.stderr).not.toContain("s3cr3t");
    expect(run.out.stderr).not.toContain("Pa55");
  });

  it("prints its help on stdout", async () => {
    const run = io();
    expect(await mcpCommand(["--help"], run.io)).toBe(0);
    expect(run.out.stdout).toContain("otc mcp serve --url");
  });

  it("with --tool-search lists search-tools and load-tools first, and searches the OXP server", async () => {
    const run = io({ OXP_API_KEY: API_KEY, OXP_URL: demo.url });
    const stop = new AbortController();
    const exit = mcpCommand(["serve", "--transport", "http", "--port", "0", "--tool-search"], run.io, {
      signal: stop.signal,
    });
    await printed(run.out, /at http:\/\/127\.0\.0\.1:\d+\/mcp/);
    const url = /at (http:\/\/\S+\/mcp)/.exec(run.out.stderr)?.[1] as string;
    const client = mcpClient();
    await connectHttp(client, url);
    const { tools } = await client.listTools();
    expect(tools.slice(0, 2).map((tool) => tool.name)).toEqual(["search-tools", "load-tools"]);
    expect(tools.map((tool) => tool.name)).toContain("Calculator_Add");
    const found = await client.callTool({ name: "search-tools", arguments: { query: "add two numbers" } });
    expect(JSON.stringify(found.structuredContent ?? found.content)).toContain("Calculator_Add");
    await client.close();
    stop.abort();
    expect(await exit).toBe(0);
  });

  it("with --tool-search refuses to start over a server without the search extension, saying so", async () => {
    const tool = defineTool({
      toolkit: "Plain",
      name: "Echo",
      version: "1.0.0",
      description: "Echoes its text.",
      inputSchema: { type: "object", properties: { text: { type: "string", description: "What to echo." } } },
      outputSchema: { type: "object" },
      run: ({ text }: { text?: string }) => ({ text }),
    } as never);
    const plain = await listen(createOxpServer({ tools: [tool], extensions: false }), { port: 0 });
    try {
      for (const transport of ["stdio", "http"]) {
        const run = io({ OXP_API_KEY: API_KEY, OXP_URL: plain.url });
        const argv = [
          "serve",
          "--transport",
          transport,
          "--tool-search",
          ...(transport === "http" ? ["--port", "0"] : []),
        ];
        expect(await mcpCommand(argv, run.io), transport).toBe(2);
        expect(run.out.stderr, transport).toMatch(/toolSearch needs an OXP server that offers the search extension/);
        expect(run.out.stderr, transport).not.toMatch(/cannot listen/);
      }
    } finally {
      await plain.close();
    }
  });

  it("serves over HTTP with the key from the environment until stopped, never printing the key", async () => {
    const run = io({ OXP_API_KEY: API_KEY, OXP_URL: demo.url });
    const stop = new AbortController();
    const exit = mcpCommand(["serve", "--transport", "http", "--port", "0"], run.io, { signal: stop.signal });
    await printed(run.out, /at http:\/\/127\.0\.0\.1:\d+\/mcp/);
    const url = /at (http:\/\/\S+\/mcp)/.exec(run.out.stderr)?.[1] as string;
    const client = mcpClient();
    await connectHttp(client, url);
    const result = await client.callTool({ name: "Calculator_Add", arguments: { a: 1, b: 2 } });
    expect(result.structuredContent).toEqual({ value: 3 });
    await client.close();
    stop.abort();
    expect(await exit).toBe(0);
    expect(run.out.stderr).not.toContain(API_KEY);
    await expect(fetch(url, { method: "POST" })).rejects.toThrow();
  });

  it("serves a v2 client in 2026-07-28 and a v1 client in 2025 on one endpoint, the token asked of both", async () => {
    const token = "a-token-for-both-generations";
    const run = io({ OXP_API_KEY: API_KEY, OXP_URL: demo.url, OXP_MCP_TOKEN: token });
    const stop = new AbortController();
    const exit = mcpCommand(["serve", "--transport", "http", "--port", "0"], run.io, { signal: stop.signal });
    try {
      await printed(run.out, /at http:\/\/127\.0\.0\.1:\d+\/mcp/);
      const url = /at (http:\/\/\S+\/mcp)/.exec(run.out.stderr)?.[1] as string;
      const headers = { authorization: `Bearer ${token}` };
      await expect(connectHttpV2(mcpClientV2(), url)).rejects.toThrow();

      const modern = mcpClientV2();
      const exchanges: Exchange[] = [];
      await connectHttpV2(modern, url, { headers, exchanges });
      expect(modern.getNegotiatedProtocolVersion()).toBe(MODERN_REVISION);
      const result = await modern.callTool({ name: "Calculator_Add", arguments: { a: 20, b: 22 } });
      expect(result.structuredContent).toEqual({ value: 42 });
      expect(exchanges.map((exchange) => exchange.method)).toEqual(["server/discover", "tools/call"]);
      await modern.close();

      const legacy = mcpClient();
      await connectHttp(legacy, url, headers);
      expect(legacy.getServerVersion()).toMatchObject({ name: "otc-mcp-bridge" });
      const older = await legacy.callTool({ name: "Calculator_Add", arguments: { a: 1, b: 1 } });
      expect(older.structuredContent).toEqual({ value: 2 });
      await legacy.close();
    } finally {
      stop.abort();
      expect(await exit).toBe(0);
    }
  });

  it("asks for the bearer token from OXP_MCP_TOKEN on every request, never printing it", async () => {
    const token = "an-http-token-from-the-environment";
    const run = io({ OXP_API_KEY: API_KEY, OXP_URL: demo.url, OXP_MCP_TOKEN: token });
    const stop = new AbortController();
    const exit = mcpCommand(["serve", "--transport", "http", "--port", "0"], run.io, { signal: stop.signal });
    try {
      await printed(run.out, /bearer token required/);
      const url = /at (http:\/\/\S+\/mcp)/.exec(run.out.stderr)?.[1] as string;
      const refused = await fetch(url, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "application/json, text/event-stream" },
        body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "tools/list" }),
      });
      expect(refused.status).toBe(401);
      expect(refused.headers.get("www-authenticate")).toMatch(/^Bearer/);
      expect(await refused.json()).toEqual({ message: expect.any(String) });
      await expect(connectHttp(mcpClient(), url)).rejects.toThrow();
      const client = mcpClient();
      await connectHttp(client, url, { authorization: `Bearer ${token}` });
      const result = await client.callTool({ name: "Calculator_Add", arguments: { a: 4, b: 5 } });
      expect(result.structuredContent).toEqual({ value: 9 });
      await client.close();
    } finally {
      stop.abort();
      expect(await exit).toBe(0);
    }
    expect(run.out.stderr).not.toContain(token);
    expect(run.out.stderr).not.toContain(API_KEY);
  });

  it("says in its help that the token guards http, and that secrets belong in the environment", async () => {
    const run = io();
    await mcpCommand(["--help"], run.io);
    expect(run.out.stdout).toMatch(/--http-token/);
    expect(run.out.stdout).toMatch(/OXP_MCP_TOKEN/);
    expect(run.out.stdout).toMatch(/in the environment rather than as\s+flags/);
  });

  it("signs JWTs with the secret from the environment", async () => {
    const secret = "a-jwt-secret-for-the-bridge-test";
    const jwtDemo = await listen(createDemoApp({ auth: { jwt: { secret } }, logger: false }).app, { port: 0 });
    const run = io({ OXP_JWT_SECRET: secret });
    const stop = new AbortController();
    const exit = mcpCommand(["serve", "--url", jwtDemo.url, "--transport", "http", "--port", "0"], run.io, {
      signal: stop.signal,
    });
    try {
      await printed(run.out, /\/mcp/);
      const client = mcpClient();
      await connectHttp(client, /at (http:\/\/\S+\/mcp)/.exec(run.out.stderr)?.[1] as string);
      const result = await client.callTool({ name: "Calculator_Add", arguments: { a: 5, b: 6 } });
      expect(result.structuredContent).toEqual({ value: 11 });
      await client.close();
    } finally {
      stop.abort();
      await exit;
      await jwtDemo.close();
    }
    expect(run.out.stderr).not.toContain(secret);
  });

  it("signs JWTs with a sub: otc-mcp by default, OXP_JWT_SUBJECT or --jwt-subject when given", async () => {
    // A bare server that shows what the bridge sends it.
    const seen: IncomingHttpHeaders[] = [];
    const oxp = createServer((req, res) => {
      seen.push(req.headers);
      res.writeHead(200, { "content-type": "application/json" }).end('{"items": []}');
    });
    await new Promise<void>((resolve) => oxp.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(oxp.address() as AddressInfo).port}`;
    const subjectOf = async (args: string[], env: Record<string, string>) => {
      const run = io({ OXP_JWT_SECRET: "a-jwt-secret-for-the-sub-test", ...env });
      const stop = new AbortController();
      const exit = mcpCommand(["serve", "--url", url, "--transport", "http", "--port", "0", ...args], run.io, {
        signal: stop.signal,
      });
      try {
        await printed(run.out, /\/mcp/);
        const client = mcpClient();
        await connectHttp(client, /at (http:\/\/\S+\/mcp)/.exec(run.out.stderr)?.[1] as string);
        await client.listTools();
        await client.close();
      } finally {
        stop.abort();
        await exit;
      }
      return decodeJwt((seen.at(-1)?.authorization ?? "").replace(/^Bearer /, "")).sub;
    };
    try {
      expect(await subjectOf([], {})).toBe("otc-mcp");
      expect(await subjectOf([], { OXP_JWT_SUBJECT: "mail-agent" })).toBe("mail-agent");
      expect(await subjectOf(["--jwt-subject", "flag-agent"], { OXP_JWT_SUBJECT: "mail-agent" })).toBe("flag-agent");
      const empty = io({ OXP_JWT_SECRET: "s" });
      expect(await mcpCommand(["serve", "--url", url, "--jwt-subject="], empty.io)).toBe(2);
      expect(empty.out.stderr).toMatch(/--jwt-subject must not be empty/);
    } finally {
      oxp.closeAllConnections();
      await new Promise((resolve) => oxp.close(resolve));
    }
  });
});
