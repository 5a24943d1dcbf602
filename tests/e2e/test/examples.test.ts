// The deployment examples (examples/) run as written: each file's default export served on its runtime, the tool listed and called.
import { fileURLToPath } from "node:url";
import { createClient } from "@otc/client";
import { startRuntime } from "@otc/test-helpers/runtimes";
import { describe, expect, it } from "vitest";

const example = (file: string) => fileURLToPath(new URL(`../../../examples/${file}`, import.meta.url));

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
    } catch (error) {
      throw new Error(`${String(error)}\n--- ${runtime}'s output ---\n${server.output()}`, { cause: error });
    } finally {
      await server.stop();
    }
  }, 90_000);
});
