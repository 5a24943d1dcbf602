// The CLI in process: pure parts (type names, the tools table, suggestions), then `run` against a real tool server.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer as createTcpServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import type { ToolDefinition } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { EXIT, formatTools, levenshtein, nearest, rootCauses, run, suggestToolIds } from "./cli.js";
import { generateBindings, typeNameOf } from "./codegen.js";

const repoRoot = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../../..");

// Input schemas are loose here: codegen must cope with what any server sends, not only what the spec's type allows.
const tool = (id: string, extra: Partial<Omit<ToolDefinition, "input_schema">> & { input_schema?: object } = {}) =>
  ({
    id,
    name: (id.split("@")[0] ?? "").replace(".", "_"),
    description: `The ${id} tool.\nMore lines.`,
    version: id.split("@")[1] ?? "",
    input_schema: {},
    output_schema: null,
    ...extra,
  }) as ToolDefinition;

/** Runs `otc` in process; resolves with its exit code and what it printed. */
async function otc(args: string[], env: Record<string, string | undefined> = {}) {
  let stdout = "";
  let stderr = "";
  const code = await run(args, {
    stdout: (text) => {
      stdout += text;
    },
    stderr: (text) => {
      stderr += text;
    },
    env,
  });
  return { code, stdout, stderr };
}

/** A port nothing listens on: one the system just handed out and took back. */
async function closedPort(): Promise<number> {
  const server = createTcpServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Runs one of the repository's tools (Biome, tsc); resolves with its exit code and output. */
function node(bin: string, args: string[]): Promise<{ code: number; output: string }> {
  return new Promise((resolve) => {
    execFile(process.execPath, [bin, ...args], { cwd: repoRoot, timeout: 60_000 }, (error, stdout, stderr) => {
      resolve({ code: error ? Number((error as { code?: number }).code ?? 1) : 0, output: `${stdout}${stderr}` });
    });
  });
}

describe("typeNameOf", () => {
  it.each([
    ["Calculator.Add@1.0.0", "CalculatorAddV1_0_0"],
    ["my_kit.do_it@10.2.3", "MyKitDoItV10_2_3"],
  ])("%s -> %s", (id, name) => {
    expect(typeNameOf(id)).toBe(name);
  });
});

describe("formatTools", () => {
  it("groups by toolkit, lists versions, shows the first description line and requirements", () => {
    const text = formatTools([
      tool("B.Two@1.0.0"),
      tool("A.One@1.0.0", { requirements: { secrets: [{ id: "K" }], user_id: true } }),
      tool("A.One@2.0.0", { requirements: { secrets: [{ id: "K" }] } }),
    ]);
    expect(text).toBe(
      "A\n  One              1.0.0, 2.0.0   The A.One@2.0.0 tool.  [needs secret:K]\nB\n  Two              1.0.0          The B.Two@1.0.0 tool.\n",
    );
  });

  it("describes the highest version, compared numerically, whatever order the server lists them in", () => {
    const text = formatTools([
      tool("A.One@1.10.0", { requirements: { user_id: true } }),
      tool("A.One@2.0.0", { requirements: { secrets: [{ id: "NEW" }] } }),
      tool("A.One@1.9.0"),
    ]);
    expect(text).toBe("A\n  One              1.9.0, 1.10.0, 2.0.0 The A.One@2.0.0 tool.  [needs secret:NEW]\n");
  });
});

describe("suggestions", () => {
  it("levenshtein counts insertions, deletions and substitutions", () => {
    expect(levenshtein("kitten", "sitting")).toBe(3);
    expect(levenshtein("", "abc")).toBe(3);
    expect(levenshtein("same", "same")).toBe(0);
  });

  it("nearest: case-insensitive, within a third of the length, at most three, nearest first", () => {
    expect(nearest("calculator.add", ["Calculator.Add", "Counter.Increment"])).toEqual(["Calculator.Add"]);
    expect(nearest("jsn", ["json", "url", "input"])).toEqual(["json"]);
    expect(nearest("foo", ["json", "url", "input"])).toEqual([]);
    expect(nearest("abcdef", ["abcdeg", "abcdgh", "abcdef", "abcdex", "abcdey", "zzzzzz"])).toEqual([
      "abcdeg",
      "abcdex",
      "abcdey",
    ]);
  });

  it("suggestToolIds: none when the tool exists, names without a version, versions when one was asked for", () => {
    const tools = [tool("Greeting.Hello@1.0.0"), tool("Greeting.Hello@2.0.0"), tool("Calculator.Add@1.0.0")];
    expect(suggestToolIds("Greeting.Hello", tools)).toEqual([]);
    expect(suggestToolIds("Greeting.Hello@2", tools)).toEqual([]);
    expect(suggestToolIds("Calculator.Ad", tools)).toEqual(["Calculator.Add"]);
    expect(suggestToolIds("Greeting.Helo@2.0.0", tools)).toEqual(["Greeting.Hello@2.0.0", "Greeting.Hello@1.0.0"]);
    expect(suggestToolIds("Greeting.Hello@3", tools)).toEqual([
      "Greeting.Hello",
      "Greeting.Hello@2.0.0",
      "Greeting.Hello@1.0.0",
    ]);
    expect(suggestToolIds("Nothing.Close", tools)).toEqual([]);
  });

  it("rootCauses walks `cause` to the bottom and opens AggregateErrors", () => {
    const refused = (address: string) => new Error(`connect ECONNREFUSED ${address}`);
    const single = new TypeError("fetch failed", { cause: refused("127.0.0.1:1") });
    expect(rootCauses(single)).toEqual(["connect ECONNREFUSED 127.0.0.1:1"]);
    const both = new TypeError("fetch failed", {
      cause: new AggregateError([refused("::1:1"), refused("127.0.0.1:1")]),
    });
    expect(rootCauses(both)).toEqual(["connect ECONNREFUSED ::1:1", "connect ECONNREFUSED 127.0.0.1:1"]);
    expect(rootCauses("plain")).toEqual(["plain"]);
    expect(rootCauses(new Error("outer", { cause: { code: "E" } }))).toEqual(["outer"]);
  });
});

describe("generateBindings", () => {
  it("types null outputs as null and {} outputs as unknown, deterministically", async () => {
    const tools = [tool("A.Nothing@1.0.0"), tool("A.Anything@1.0.0", { output_schema: {} })];
    const code = await generateBindings(tools, "x.json");
    expect(code).toContain("export type ANothingV1_0_0Output = null;");
    expect(code).toContain("export type AAnythingV1_0_0Output = unknown;");
    expect(await generateBindings([...tools].reverse(), "x.json")).toBe(code);
  });

  it("never writes an empty interface or a {} type, and marks the file as generated", async () => {
    const code = await generateBindings(
      [
        tool("A.NoInput@1.0.0", {
          input_schema: { type: "object", properties: { options: { type: "object" } } },
          output_schema: { type: "object", properties: {} },
        }),
      ],
      "http://127.0.0.1:8080",
    );
    expect(code.split("\n")[0]).toBe("// Generated by otc codegen from http://127.0.0.1:8080 — do not edit.");
    expect(code).toContain("export type ANoInputV1_0_0Output = Record<string, never>;");
    expect(code).toContain("options?: Record<string, never>;");
    expect(code).not.toMatch(/interface \w+ \{\}|: \{\};/);
    expect(await generateBindings([], "x.json")).toContain("export type Tools = Record<string, never>;");
  });

  // Wide enough that the Tools members and toolIds must wrap, with members of 119, 120 and 121 columns
  // around Biome's line width, and schemas that exercise the generator's layout.
  const fixture = [
    tool("Edge.Aaaaaaaaaaaaaaaa__@1.0.0", { output_schema: {} }),
    tool("Edge.Bbbbbbbbbbbbbbbb___@1.0.0", { output_schema: {} }),
    tool("Edge.Cccccccccccccccc_@1.0.0", { output_schema: {} }),
    tool("Shapes.Everything@2.10.0", {
      description: "Every shape\u2028of schema.",
      input_schema: {
        type: "object",
        properties: {
          "kebab-name": { type: "string", description: "Ends a comment? */ not here." },
          empty: { type: "object", title: "Empty" },
          open: { type: "object", additionalProperties: true },
          map: { type: "object", additionalProperties: { type: "number" } },
          choice: {
            enum: ['say "hi"', "it's", "aaaaaaaaaaaaaaaaaaaaaaaaaaaaa", "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb"],
          },
          either: { anyOf: [{ type: "string" }, { type: "number" }, { type: "null" }] },
          list: { type: "array", items: { type: "object", properties: { x: { type: "integer" } }, required: ["x"] } },
          kept: { type: "string", default: { title: "data, not a schema" } },
        },
        required: ["kebab-name"],
        additionalProperties: false,
      },
      output_schema: { oneOf: [{ type: "string" }, { type: "array", items: { type: "object" } }] },
    }),
    tool("System.GetTimestamp@1.0.0", {
      output_schema: { type: "object", properties: { timestamp: { type: "string" } }, required: ["timestamp"] },
    }),
  ];

  it("writes what Biome would and what tsc --strict accepts, with and without its lint suppression", async () => {
    const code = await generateBindings(fixture, "fixture.json");
    expect(code).toContain("// biome-ignore-all lint:");
    expect(code).toContain('  "Edge.Cccccccccccccccc_@1.0.0": { input:');
    expect(code).toContain('  "Edge.Bbbbbbbbbbbbbbbb___@1.0.0": {\n');
    // Outside the repository, so no one else's `biome ci .` sees it; the repository's biome.json still applies.
    const dir = await mkdtemp(path.join(os.tmpdir(), "otc-codegen-"));
    try {
      await writeFile(path.join(dir, "tools.ts"), code);
      await writeFile(path.join(dir, "unsuppressed.ts"), code.replace(/^\/\/ biome-ignore-all.*\n/m, ""));
      const checked = await node(path.join(repoRoot, "node_modules/@biomejs/biome/bin/biome"), [
        "check",
        "--error-on-warnings",
        "--vcs-enabled=false",
        `--config-path=${path.join(repoRoot, "biome.json")}`,
        path.join(dir, "tools.ts"),
        path.join(dir, "unsuppressed.ts"),
      ]);
      expect(checked.output).toContain("Checked 2 files");
      expect(checked, checked.output).toMatchObject({ code: 0 });
      // The strictest settings a user may have; @otc/client is the one import, found where this repository built it.
      const compilerOptions = {
        strict: true,
        noEmit: true,
        module: "nodenext",
        moduleResolution: "nodenext",
        target: "es2022",
        skipLibCheck: false,
        noUncheckedIndexedAccess: true,
        exactOptionalPropertyTypes: true,
        noUnusedLocals: true,
        types: [],
        paths: { "@otc/client": [path.join(repoRoot, "packages/client/dist/index.d.ts")] },
      };
      await writeFile(path.join(dir, "tsconfig.json"), JSON.stringify({ compilerOptions, files: ["tools.ts"] }));
      const compiled = await node(path.join(repoRoot, "node_modules/typescript/bin/tsc"), ["-p", dir]);
      expect(compiled, compiled.output).toMatchObject({ code: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  }, 60_000);
});

describe("run", () => {
  let server: RunningServer;
  let tmp: string;

  beforeAll(async () => {
    const tools = [
      defineTool({
        toolkit: "Calculator",
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
        run: ({ a, b }) => a + b,
      }),
      ...["1.9.0", "1.10.0"].map((version) =>
        defineTool({
          toolkit: "Greeting",
          name: "Hello",
          version,
          description: `Greets, version ${version}.`,
          inputSchema: { type: "object", properties: {}, additionalProperties: false },
          outputSchema: { type: "string" },
          run: () => `hello from ${version}`,
        }),
      ),
    ];
    server = await listen(createServer({ tools, logger: false }), { port: 0 });
    tmp = await mkdtemp(path.join(os.tmpdir(), "otc-cli-"));
  });
  afterAll(async () => {
    await Promise.all([server?.close(), tmp && rm(tmp, { recursive: true, force: true })]);
  });

  it("exits 2 without a command, printing the help to stderr", async () => {
    const { code, stderr } = await otc([]);
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain("Usage:");
  });

  it("calls a tool and lists tools, the highest version last", async () => {
    expect(await otc(["call", "Calculator.Add", "--input", '{"a": 2, "b": 40}', "--url", server.url])).toEqual({
      code: EXIT.ok,
      stdout: "42\n",
      stderr: "",
    });
    expect(await otc(["call", "Greeting.Hello"], { OXP_URL: server.url })).toMatchObject({
      stdout: "hello from 1.10.0\n",
    });
    const { stdout } = await otc(["tools", "--url", server.url]);
    expect(stdout).toContain("  Hello            1.9.0, 1.10.0  Greets, version 1.10.0.\n");
  });

  it("says why a server could not be reached, not just `fetch failed` (exit 3)", async () => {
    const port = await closedPort();
    const { code, stderr } = await otc(["health", "--url", `http://127.0.0.1:${port}`]);
    expect(code).toBe(EXIT.connection);
    expect(stderr).toBe(`Could not reach http://127.0.0.1:${port}: connect ECONNREFUSED 127.0.0.1:${port}\n`);
    const codegen = await otc(["codegen", "--from", `http://127.0.0.1:${port}`, "--out", path.join(tmp, "never.ts")]);
    expect(codegen).toMatchObject({ code: EXIT.connection, stdout: "" });
    expect(codegen.stderr).toContain(`: connect ECONNREFUSED 127.0.0.1:${port}\n`);
    expect(await otc(["tools", "--url", "http://127.0.0.1:1"])).toMatchObject({
      code: EXIT.connection,
      stderr:
        "Could not reach http://127.0.0.1:1: fetch refuses this port (https://fetch.spec.whatwg.org/#port-blocking)\n",
    });
  });

  it.each([
    [
      ["tools", "--url", "127.0.0.1:8080"],
      "otc: --url must be an http:// or https:// URL, e.g. --url http://127.0.0.1:8080 (got '127.0.0.1:8080')",
    ],
    [
      ["health", "--url", "ftp://example.com"],
      "otc: --url must be an http:// or https:// URL, e.g. --url http://127.0.0.1:8080 (got 'ftp://example.com')",
    ],
    [
      ["health", "--url", "localhost:8080"],
      "otc: --url must be an http:// or https:// URL, e.g. --url http://localhost:8080",
    ],
    [["call", "Calculator.Add", "--url", "not a url"], "otc: --url must be an http:// or https:// URL"],
    [["tools", "--frobnicate"], "otc: unknown option '--frobnicate'"],
    [["tools", "--jsn"], "otc: unknown option '--jsn' (did you mean '--json'?)"],
    [["tools", "-x"], "otc: unknown option '-x'"],
    [["tools", "--url"], "otc: option '--url' needs a value"],
    [["tools", "--json=yes"], "otc: option '--json' takes no value"],
    [
      ["call", "A.B", "--input", "-1"],
      "otc: option '--input' needs a value (for one that starts with '-', write --input=-1)",
    ],
    [["frobnicate"], "otc: unknown command 'frobnicate'"],
    [["tool"], "otc: unknown command 'tool' (did you mean 'tools'?)"],
    [
      ["call", "Calculator.Add", "a=1", "b=2"],
      `otc: unexpected arguments 'a=1', 'b=2': pass the input as JSON, e.g. otc call Calculator.Add --input '{"a": 1, "b": 2}'`,
    ],
    [
      ["call", "Greeting.Hello", "name=Ann"],
      `otc: unexpected argument 'name=Ann': pass the input as JSON, e.g. otc call Greeting.Hello --input '{"name": "Ann"}'`,
    ],
    [
      ["call", "Calculator.Add", "1", "2"],
      `otc: unexpected arguments '1', '2': pass the input as JSON, e.g. otc call Calculator.Add --input '{"a": 1, "b": 2}'`,
    ],
    [["health", "now"], "otc: unexpected argument 'now': otc health takes no arguments"],
    [["tools", "Calculator"], "otc: unexpected argument 'Calculator': otc tools takes no arguments"],
    [
      ["codegen", "http://127.0.0.1:8080", "tools.ts"],
      "otc: unexpected arguments 'http://127.0.0.1:8080', 'tools.ts': codegen takes options, e.g. otc codegen --from http://127.0.0.1:8080 --out tools.ts",
    ],
    [["call"], `otc: call needs a tool id, e.g. otc call Calculator.Add --input '{"a": 1, "b": 2}'`],
    [["call", "Calculator.Add", "--input", "{nope"], "otc: --input is not valid JSON"],
    [["call", "Calculator.Add", "--secret", "novalue"], "otc: --secret takes ID=VALUE, got 'novalue'"],
    [
      ["codegen", "--from", "127.0.0.1:8080", "--out", "x.ts"],
      "otc: --from must be an http:// or https:// URL or a file",
    ],
  ])("usage error: otc %j", async (args, message) => {
    const { code, stdout, stderr } = await otc(args, { OXP_URL: server.url });
    expect(code).toBe(EXIT.usage);
    expect(stdout).toBe("");
    const lines = stderr.split("\n");
    expect(lines).toHaveLength(3);
    expect(lines[0]?.startsWith(message), `${lines[0]} starts with ${message}`).toBe(true);
    expect(lines.slice(1)).toEqual(["Run 'otc --help' for usage.", ""]);
  });

  it("refuses a bad OXP_URL as a usage error, naming the variable", async () => {
    const { code, stderr } = await otc(["health"], { OXP_URL: "127.0.0.1:8080" });
    expect(code).toBe(EXIT.usage);
    expect(stderr).toContain("otc: OXP_URL must be an http:// or https:// URL, e.g. OXP_URL=http://127.0.0.1:8080");
  });

  it("suggests the nearest tool ids for an unknown tool (exit 5), and none for a known one", async () => {
    const typo = await otc(["call", "calculator.ad", "--url", server.url]);
    expect(typo.code).toBe(EXIT.refused);
    expect(typo.stderr).toBe(
      "The server refused the call: Tool 'calculator.ad' was not found\n" +
        "  No tool named calculator.ad is served here.\n" +
        "  did you mean Calculator.Add?\n",
    );
    const version = await otc(["call", "Greeting.Hello@1.9", "--url", server.url]);
    expect(version.stderr).toContain("  did you mean Greeting.Hello@1.9.0, Greeting.Hello, Greeting.Hello@1.10.0?\n");
    const unrelated = await otc(["call", "Weather.Forecast", "--url", server.url]);
    expect(unrelated).toMatchObject({ code: EXIT.refused });
    expect(unrelated.stderr).not.toContain("did you mean");
  });

  it("codegen from a server writes bindings that name the server", async () => {
    const out = path.join(tmp, "tools.ts");
    const { code, stdout } = await otc(["codegen", "--from", `${server.url}/`, "--out", out]);
    expect(code).toBe(EXIT.ok);
    expect(stdout).toBe(`wrote bindings for 3 tools to ${out}\n`);
    const text = await readFile(out, "utf8");
    expect(text.split("\n")[0]).toBe(`// Generated by otc codegen from ${server.url} — do not edit.`);
    expect(text).toContain("export type GreetingHelloV1_10_0Input = Record<string, never>;");
  });
});
