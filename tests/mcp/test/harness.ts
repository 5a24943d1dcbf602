/** Test harness: the demo on port 0 with an API key, the bridge in front of it over stdio (a child process) or HTTP, and the consent-page walk. */
import { fileURLToPath } from "node:url";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { type ElicitRequest, ElicitRequestSchema } from "@modelcontextprotocol/sdk/types.js";
import { createDemoApp } from "@otc/demo/app";
import { listen } from "@otc/server";

export const API_KEY = "mcp-bridge-test-key-0123456789";

/** The demo, requiring an API key, on 127.0.0.1 port 0. */
export async function startDemo() {
  const demo = createDemoApp({ auth: { apiKeys: [API_KEY] }, logger: false, validateResponses: true });
  return listen(demo.app, { port: 0 });
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

const launcher = fileURLToPath(new URL("./bridge-launcher.ts", import.meta.url));
const packageDir = fileURLToPath(new URL("..", import.meta.url));

/** Connects `client` to the bridge run as `otc mcp serve` in a child process over stdio; the API key goes in its env. */
export async function connectStdio(client: Client, url: string, args: string[] = [], env: Record<string, string> = {}) {
  const transport = new StdioClientTransport({
    command: process.execPath,
    args: ["--import", "tsx", launcher, "serve", "--url", url, ...args],
    env: { OXP_API_KEY: API_KEY, ...env },
    cwd: packageDir,
    stderr: "pipe",
  });
  let stderr = "";
  transport.stderr?.on("data", (chunk) => {
    stderr += String(chunk);
  });
  await client.connect(transport);
  return { transport, stderr: () => stderr };
}

/** Connects `client` to a streamable HTTP MCP endpoint, sending `headers` (e.g. the bearer token) with every request. */
export async function connectHttp(client: Client, url: string, headers: Record<string, string> = {}) {
  await client.connect(new StreamableHTTPClientTransport(new URL(url), { requestInit: { headers } }));
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
