/**
 * Test harness: the demo on port 0 with an API key, the bridge in front of it over stdio (a child process) or HTTP,
 * reached with either SDK generation's client (v1: @modelcontextprotocol/sdk, v2: @modelcontextprotocol/client),
 * and the consent-page walk.
 */
import { mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import {
  type ElicitRequest as ElicitRequestV2,
  type FetchLike,
  Client as V2Client,
  StreamableHTTPClientTransport as V2HttpTransport,
} from "@modelcontextprotocol/client";
import { StdioClientTransport as V2StdioTransport } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type ElicitRequest, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createDemoApp } from "@otc/demo/app";
import { listen, type RunningServer } from "@otc/server";
import { until } from "@otc/test-helpers/until";
import { build } from "esbuild";
import { afterAll } from "vitest";

export const API_KEY = "mcp-bridge-test-key-0123456789";

/** The demo, and the authorization challenges whose status was asked of it (check_url), by id, in order. */
export interface Demo extends RunningServer {
  checked: readonly string[];
}

/** The demo, requiring an API key, on 127.0.0.1 port 0. */
export async function startDemo(): Promise<Demo> {
  const demo = createDemoApp({ auth: { apiKeys: [API_KEY] }, logger: false, validateResponses: true });
  // What polling the check_url reaches: a test sees the bridge wait on a challenge before it approves it.
  const checked: string[] = [];
  const google = demo.google;
  if (!google) {
    throw new Error("the demo without Example Accounts has its Google provider");
  }
  const check = google.checkChallenge.bind(google);
  google.checkChallenge = (challengeId) => {
    checked.push(challengeId);
    return check(challengeId);
  };
  return Object.assign(await listen(demo.app, { port: 0 }), { checked });
}

/** An SDK client; with `onElicit` it declares URL-mode elicitation and answers with it. */
export function mcpClient(onElicit?: (request: ElicitRequest) => Promise<{ action: "accept" | "decline" | "cancel" }>) {
  const client = new Client(
    { name: "bridge-test", version: "1.0.0" },
    onElicit ? { capabilities: { elicitation: { url: {} } } } : {},
  );
  if (onElicit) {
    client.setRequestHandler(ElicitRequestSchema, (request) => onElicit(request));
  }
  return client;
}

/** The revision the v2 SDK speaks to a server that offers it (the 2026-07-28 spec: stateless, no `initialize`). */
export const MODERN_REVISION = "2026-07-28";

/**
 * A v2 SDK client that negotiates (`auto`): 2026-07-28 with a server that offers it, else 2025. With `onElicit` it
 * declares URL-mode elicitation and answers with it.
 */
export function mcpClientV2(
  onElicit?: (request: ElicitRequestV2) => Promise<{ action: "accept" | "decline" | "cancel" }>,
): V2Client {
  const client = new V2Client(
    { name: "bridge-test-v2", version: "1.0.0" },
    {
      versionNegotiation: { mode: "auto" },
      ...(onElicit ? { capabilities: { elicitation: { url: {} } } } : {}),
    },
  );
  if (onElicit) {
    client.setRequestHandler("elicitation/create", (request) => onElicit(request));
  }
  return client;
}

const launcher = fileURLToPath(new URL("./bridge-launcher.ts", import.meta.url));
const packageDir = fileURLToPath(new URL("..", import.meta.url));
const repoRoot = fileURLToPath(new URL("../../../", import.meta.url));

let bundled: Promise<string> | undefined;
let bundleDir: string | undefined;

// The bundle goes with the test file that made it (a test worker may end without an `exit` event).
afterAll(() => {
  if (bundleDir) {
    rmSync(bundleDir, { recursive: true, force: true });
  }
});

/**
 * The launcher and the CLI's sources (`@otc/*` as tsconfig.sources.json maps them) bundled into one file by esbuild,
 * once per test file, so the stdio tests need no build. Run with `node --import tsx`, each start compiled every
 * module again: 2 to 3 s before the bridge answered on a quiet machine, about 4 times the bundle's 0.5 s, which a
 * busy machine multiplied past a test's limit when it started the bridge twice (a v2 client's probe, then its
 * session).
 */
function bundledLauncher(): Promise<string> {
  bundled ??= (async () => {
    const { paths } = JSON.parse(readFileSync(join(repoRoot, "tsconfig.sources.json"), "utf8")).compilerOptions as {
      paths: Record<string, [string]>;
    };
    const dir = mkdtempSync(join(tmpdir(), "otc-mcp-launcher-"));
    bundleDir = dir;
    const outfile = join(dir, "otc-mcp.mjs");
    await build({
      entryPoints: [launcher],
      outfile,
      bundle: true,
      platform: "node",
      format: "esm",
      // The CommonJS dependencies' require(), in an ES module.
      banner: { js: 'import { createRequire } from "node:module"; const require = createRequire(import.meta.url);' },
      logLevel: "error",
      plugins: [
        {
          name: "otc-sources",
          setup(bundler) {
            bundler.onResolve({ filter: /^@otc\// }, (args) => {
              const target = paths[args.path]?.[0];
              return target ? { path: join(repoRoot, target) } : undefined;
            });
          },
        },
      ],
    });
    return outfile;
  })();
  return bundled;
}

/** How `otc mcp serve` is started over stdio, from the CLI's sources (bundled); the API key goes in its env. */
const stdioServe = async (url: string, args: string[], env: Record<string, string>) => ({
  command: process.execPath,
  args: [await bundledLauncher(), "serve", "--url", url, ...args],
  env: { OXP_API_KEY: API_KEY, ...env },
  cwd: packageDir,
  stderr: "pipe" as const,
});

/** Connects `client` to the bridge run as `otc mcp serve` in a child process over stdio; the API key goes in its env. */
export async function connectStdio(client: Client, url: string, args: string[] = [], env: Record<string, string> = {}) {
  const transport = new StdioClientTransport(await stdioServe(url, args, env));
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  await client.connect(transport);
  return { transport, stderr: () => stderr };
}

/**
 * Connects `client` to a streamable HTTP MCP endpoint, sending `headers` (e.g. the bearer token) with every request,
 * through `fetch` when given (to see each exchange).
 */
export async function connectHttp(
  client: Client,
  url: string,
  headers: Record<string, string> = {},
  fetch?: FetchLike,
) {
  await client.connect(
    new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers }, ...(fetch ? { fetch } : {}) }),
  );
}

/**
 * Connects a v2 `client` to the bridge run as `otc mcp serve` over stdio. The SDK starts the command twice: once
 * for its `server/discover` probe, then for the session.
 */
export async function connectStdioV2(
  client: V2Client,
  url: string,
  args: string[] = [],
  env: Record<string, string> = {},
): Promise<void> {
  await client.connect(new V2StdioTransport(await stdioServe(url, args, env)));
}

/** One HTTP exchange as the v2 client's transport made it: the request's headers and JSON-RPC method, the answer's headers. */
export interface Exchange {
  method: string | undefined;
  request: Headers;
  response: Headers;
}

/** Connects a v2 `client` to a streamable HTTP MCP endpoint; each exchange is pushed onto `exchanges` when given. */
export async function connectHttpV2(
  client: V2Client,
  url: string,
  options: { headers?: Record<string, string>; exchanges?: Exchange[] } = {},
): Promise<void> {
  const { exchanges } = options;
  const observed: FetchLike = async (input, init) => {
    const response = await fetch(input, init);
    const body = typeof init?.body === "string" ? (JSON.parse(init.body) as { method?: string }) : undefined;
    exchanges?.push({ method: body?.method, request: new Headers(init?.headers), response: response.headers });
    return response;
  };
  await client.connect(
    new V2HttpTransport(new URL(url), {
      ...(options.headers ? { requestInit: { headers: options.headers } } : {}),
      fetch: observed,
    }),
  );
}

/**
 * Resolves once the bridge has asked the demo the status of the challenge behind the consent page `url` (polled its
 * check_url): the challenge was pending then, so the bridge is waiting on it.
 */
export function polled(demo: Demo, url: string): Promise<void> {
  const challengeId = decodeURIComponent(new URL(url).pathname.split("/").at(-1) ?? "");
  return until(() => demo.checked.includes(challengeId), { what: `the bridge to poll challenge ${challengeId}` });
}

/** Approves a demo authorization challenge the way its consent page's form does: GET the page, POST approve with its CSRF token. */
export async function approve(url: string): Promise<void> {
  const page = await (await fetch(url)).text();
  const csrf = /<input type="hidden" name="csrf" value="([^"]+)">/.exec(page)?.[1];
  if (!csrf) {
    throw new Error(`no csrf input on the consent page: ${page.slice(0, 200)}`);
  }
  const answer = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ action: "approve", csrf }).toString(),
    redirect: "manual",
  });
  if (answer.status !== 303) {
    throw new Error(`approving answered ${answer.status}`);
  }
}

/** The text of a tool result's first content block. */
export function textOf(result: unknown): string {
  const [first] = ((result as { content?: unknown }).content ?? []) as { type: string; text?: string }[];
  return first?.type === "text" ? (first.text ?? "") : "";
}
