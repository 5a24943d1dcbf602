// Every runtime serves the echo fixture as a real process on loopback: GETs, a POST body round trip and env reach the handler there, and a start that fails says why.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { RUNTIMES, type RunningRuntime, type Runtime, startRuntime } from "../src/runtimes.js";

const ENTRY = fileURLToPath(new URL("../fixtures/echo-entry.mjs", import.meta.url));
// Quotes, a newline and non-ASCII: what a careless capnp or JSON embedding would mangle.
const ENV = { GREETING: 'hello "runtime"\nline two ✓', EMPTY: "" };

const servers = new Map<Runtime, RunningRuntime>();

beforeAll(async () => {
  // All at once: the slowest start, not their sum, bounds the suite.
  const started = await Promise.allSettled(
    RUNTIMES.map(async (runtime) => servers.set(runtime, await startRuntime({ runtime, entry: ENTRY, env: ENV }))),
  );
  const failure = started.find((result) => result.status === "rejected");
  if (failure) {
    throw failure.reason;
  }
});

afterAll(async () => {
  await Promise.all([...servers.values()].map((server) => server.stop()));
});

/** The echo fixture's answer. */
interface Echo {
  runtime: string;
  method: string;
  url: string;
  body: string | null;
  env: Record<string, string> | null;
}

async function echo(server: RunningRuntime, path: string, init?: RequestInit): Promise<Echo> {
  const response = await fetch(`${server.url}${path}`, init);
  expect(response.status).toBe(200);
  return (await response.json()) as Echo;
}

describe.each(RUNTIMES)("%s", (runtime) => {
  const server = () => {
    const running = servers.get(runtime);
    if (!running) {
      throw new Error(`${runtime} did not start`);
    }
    return running;
  };

  it("serves on a loopback port of its own, and says how long the start took", () => {
    expect(server().url).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    expect(server().startedMs).toBeGreaterThan(0);
  });

  it("answers a GET from that runtime, with the request's own URL and method", async () => {
    const answer = await echo(server(), "/some/path?q=1");
    expect(answer).toMatchObject({
      runtime,
      method: "GET",
      url: `${server().url}/some/path?q=1`,
      body: null,
    });
  });

  it("round-trips a POST body of 256 KiB, non-ASCII text included", async () => {
    const body = "ünïcødé ✓ ".repeat(20_000).slice(0, 256 * 1024);
    const answer = await echo(server(), "/echo", { method: "POST", body, headers: { "content-type": "text/plain" } });
    expect(answer.method).toBe("POST");
    expect(answer.body).toBe(body);
  });

  it("hands env to the handler as fetch's second argument", async () => {
    expect((await echo(server(), "/")).env).toEqual(ENV);
  });
});

describe("a start that fails", () => {
  let dir: string;
  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), "otc-runtimes-test-"));
  });
  afterAll(async () => {
    await rm(dir, { recursive: true, force: true });
  });

  it("rejects with the runtime's own output when the entry throws on import", async () => {
    const entry = join(dir, "throws.mjs");
    await writeFile(entry, 'throw new Error("entry refuses to load");\nexport default {};\n');
    await expect(startRuntime({ runtime: "bun", entry })).rejects.toThrow(/bun exited[\s\S]*entry refuses to load/);
  });

  it("rejects when the default export has no fetch method", async () => {
    const entry = join(dir, "no-fetch.mjs");
    await writeFile(entry, "export default {};\n");
    await expect(startRuntime({ runtime: "deno", entry })).rejects.toThrow(/has no fetch method/);
  });

  it("rejects on workerd an entry that needs Node's built-ins: no nodejs_compat to lean on", async () => {
    const entry = join(dir, "node-only.mjs");
    await writeFile(
      entry,
      'import { hostname } from "node:os";\nexport default { fetch: () => new Response(hostname()) };\n',
    );
    await expect(startRuntime({ runtime: "workerd", entry })).rejects.toThrow(/esbuild could not bundle[\s\S]*node:os/);
  });

  it("rejects in time, with the output so far, when the server never answers", async () => {
    const entry = join(dir, "silent.mjs");
    // Listens (the launcher prints its port) but never answers: the ready poll waits on a request that hangs.
    await writeFile(entry, "export default { fetch: () => new Promise(() => {}) };\n");
    const started = Date.now();
    await expect(startRuntime({ runtime: "bun", entry, timeoutMs: 1_500 })).rejects.toThrow(
      /bun did not answer within 1500 ms/,
    );
    expect(Date.now() - started).toBeLessThan(5_000);
  });
});

it("stop() ends the process: its port refuses connections afterwards", async () => {
  const server = await startRuntime({ runtime: "bun", entry: ENTRY });
  await server.stop();
  await expect(fetch(server.url)).rejects.toThrow();
});
