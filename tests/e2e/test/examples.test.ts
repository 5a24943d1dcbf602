// The deployment examples (examples/) run as written: each file's default export served on its runtime, the tool listed and called; on Bun and Deno the handler sees the client's address.
import { request as httpRequest } from "node:http";
import { fileURLToPath } from "node:url";
import { createClient } from "@otc/client";
import { startRuntime } from "@otc/test-helpers/runtimes";
import { describe, expect, it } from "vitest";

const example = (file: string) => fileURLToPath(new URL(`../../../examples/${file}`, import.meta.url));

/** The status and body of a GET of `path` from `baseUrl`'s server, sent with the given Host header. */
function getWithHost(baseUrl: string, path: string, host: string): Promise<{ status: number; body: string }> {
  const { hostname, port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: hostname, port, path, agent: false, headers: { host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

describe.each([
  ["bun", "bun/server.ts"],
  ["deno", "deno/server.ts"],
  ["workerd", "cloudflare-workers/worker.ts"],
] as const)("the %s example", (runtime, file) => {
  it("lists Calculator.Add and adds", async () => {
    const server = await startRuntime({ runtime, entry: example(file), readyPath: "/health", timeoutMs: 60_000 });
    try {
      const client = createClient({ baseUrl: server.url });
      expect((await client.listTools()).map((tool) => tool.id)).toContain("Calculator.Add@1.0.0");
      expect(await client.callTool({ tool_id: "Calculator.Add", input: { a: 2, b: 3 } })).toMatchObject({
        success: true,
        value: 5,
      });
      if (runtime !== "workerd") {
        // The handler read the loopback client's address from the runtime's own second argument (Bun's Server, Deno's
        // ServeHandlerInfo), so the default Host check is on, as on node:http: a rebound name is refused.
        const rebound = await getWithHost(server.url, "/tools", "rebound.example");
        expect(rebound.status, rebound.body).toBe(400);
        expect(JSON.parse(rebound.body)).toMatchObject({ message: "The request's Host does not name this server" });
        expect((await getWithHost(server.url, "/tools", `localhost:${new URL(server.url).port}`)).status).toBe(200);
      }
    } catch (error) {
      throw new Error(`${String(error)}\n--- ${runtime}'s output ---\n${server.output()}`, { cause: error });
    } finally {
      await server.stop();
    }
  });
});
