// What each entry point loads: /node, /fetch and /core load no Express, /fetch no pino either, and /fetch bundles for a neutral platform with no Node built-in.
import { execFile } from "node:child_process";
import { fileURLToPath } from "node:url";
import { promisify } from "node:util";
import { bundleWithoutNode } from "@otc/test-helpers/bundle";
import { describe, expect, it } from "vitest";

const src = fileURLToPath(new URL("../src/", import.meta.url));

/** The CommonJS packages (Express and its kin are CommonJS) an entry point loads, in a fresh process. */
async function packagesLoadedBy(entry: string): Promise<string[]> {
  const probe = `
    import { createRequire } from "node:module";
    await import(${JSON.stringify(`${src}${entry}`)});
    const cache = createRequire(import.meta.url).cache;
    const names = Object.keys(cache).flatMap((file) => /node_modules[\\\\/]((?:@[^\\\\/]+[\\\\/])?[^\\\\/]+)[\\\\/]/.exec(file)?.[1] ?? []);
    console.log(JSON.stringify([...new Set(names)].sort()));
  `;
  const { stdout } = await promisify(execFile)(
    process.execPath,
    ["--import", "tsx", "--input-type=module", "-e", probe],
    {
      cwd: fileURLToPath(new URL("..", import.meta.url)),
      env: { ...process.env, LOG_LEVEL: "silent" },
    },
  );
  return JSON.parse(stdout.trim().split("\n").at(-1) ?? "[]") as string[];
}

const EXPRESS = ["express", "express-openapi-validator", "body-parser"];

describe("entry points", () => {
  it("@otc/server loads Express (the probe sees what an entry loads)", async () => {
    expect(await packagesLoadedBy("index.ts")).toEqual(
      expect.arrayContaining(["express", "express-openapi-validator"]),
    );
  });

  it.each(["node.ts", "fetch.ts", "core/index.ts"])(
    "%s loads neither Express nor express-openapi-validator",
    async (entry) => {
      const loaded = await packagesLoadedBy(entry);
      expect(loaded.filter((name) => EXPRESS.includes(name))).toEqual([]);
    },
  );

  it("fetch.ts loads no pino and no prom-client", async () => {
    const loaded = await packagesLoadedBy("fetch.ts");
    expect(loaded.filter((name) => ["pino", "prom-client", "@hono/node-server"].includes(name))).toEqual([]);
  });

  it("bundles the fetch entry for a neutral platform (workerd's conditions) without any Node built-in", async () => {
    expect(await bundleWithoutNode(`${src}fetch.ts`)).toContain("createFetchHandler");
  });
});
