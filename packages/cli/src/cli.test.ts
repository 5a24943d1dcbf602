// The CLI in process: pure parts (type names, the tools table, suggestions), then `run` against a real tool server.
import { execFile } from "node:child_process";
import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingMessage, type ServerResponse } from "node:http";
import { type AddressInfo, createServer as createTcpServer } from "node:net";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createServer, defineTool, listen, type RunningServer } from "@otc/server";
import { endlessToolList, json } from "@otc/test-helpers/hostile-server";
import type { ToolDefinition } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  DEFAULT_JWT_SUBJECT,
  formatTools,
  levenshtein,
  nearest,
  rootCauses,
  run,
  suggestToolIds,
  terminalSafe,
} from "./cli.js";
import { generateBindings, typeNameOf } from "./codegen.js";
import { EXIT } from "./io.js";

/** The claims of a JWT, read without checking its signature (the test only looks at what was sent). */
const decodeJwt = (token: string): Record<string, unknown> =>
  JSON.parse(Buffer.from(token.split(".")[1] ?? "", "base64url").toString());

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
    // real time: a hung tool is killed before the gate's 300 s guard, so that the failure shows its output.
    execFile(process.execPath, [bin, ...args], { cwd: repoRoot, timeout: 280_000 }, (error, stdout, stderr) => {
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

describe("formatTools with annotations", () => {
  it("leads with the title, brackets the hints stated, and gives each deprecated version a line", () => {
    const text = formatTools([
      tool("A.One@1.0.0", { deprecation_message: "Use A.One@2.0.0.\nA second line." }),
      tool("A.One@2.0.0", {
        annotations: { title: "The one", read_only: true, open_world: false },
        requirements: { secrets: [{ id: "K" }] },
      }),
      tool("B.Two@1.0.0", { annotations: { destructive: false, idempotent: true } }),
      tool("C.Three@1.0.0", { annotations: {} }),
    ]);
    expect(text).toBe(
      "A\n" +
        "  One              1.0.0, 2.0.0   The one — The A.One@2.0.0 tool.  [needs secret:K]  [read-only, not open-world]\n" +
        "                                  1.0.0 is deprecated: Use A.One@2.0.0.\n" +
        "B\n" +
        "  Two              1.0.0          The B.Two@1.0.0 tool.  [not destructive, idempotent]\n" +
        "C\n" +
        "  Three            1.0.0          The C.Three@1.0.0 tool.\n",
    );
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
        `--config-path=${path.join(repoRoot, "biome.jsonc")}`,
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
  });
});

describe("generateBindings with annotations", () => {
  it("lays doc comments out as Biome does, long and multi-line deprecations included", async () => {
    const code = await generateBindings(
      [
        tool("A.Old@1.0.0", {
          deprecation_message: `Use A.New@2.0.0: ${"it does the same, and more. ".repeat(8)}\n\nSee the changelog.`,
        }),
        tool("A.New@2.0.0", { annotations: { title: "New", read_only: true, open_world: false } }),
      ],
      "annotated.json",
    );
    expect(code).toContain("   * @deprecated Use A.New@2.0.0: it does");
    expect(code).toContain("   *\n   * See the changelog.\n   */\n");
    const dir = await mkdtemp(path.join(os.tmpdir(), "otc-codegen-"));
    try {
      await writeFile(path.join(dir, "tools.ts"), code);
      const checked = await node(path.join(repoRoot, "node_modules/@biomejs/biome/bin/biome"), [
        "check",
        "--error-on-warnings",
        "--vcs-enabled=false",
        `--config-path=${path.join(repoRoot, "biome.jsonc")}`,
        path.join(dir, "tools.ts"),
      ]);
      expect(checked, checked.output).toMatchObject({ code: 0 });
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
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

describe("annotations from a server that offers them", () => {
  let annotated: RunningServer;
  /** The same catalog, extensions off: an OXP 1.0 list. */
  let plain: RunningServer;
  let tmp: string;

  beforeAll(async () => {
    const tools = [
      defineTool({
        toolkit: "Calculator",
        name: "Add",
        version: "1.0.0",
        description: "Adds two numbers.",
        inputSchema: {},
        outputSchema: { type: "number" },
        annotations: { title: "Add two numbers", read_only: true, idempotent: true, open_world: false },
        run: () => 0,
      }),
      ...["1.0.0", "2.0.0"].map((version) =>
        defineTool({
          toolkit: "Greeting",
          name: "Hello",
          version,
          description: `Greets, version ${version}.`,
          inputSchema: {},
          outputSchema: { type: "string" },
          ...(version === "1.0.0" ? { deprecationMessage: "Use Greeting.Hello@2.0.0, which speaks French too." } : {}),
          run: () => "hello",
        }),
      ),
      defineTool({
        toolkit: "Mail",
        name: "Purge",
        version: "1.0.0",
        description: "Deletes every mail.",
        inputSchema: {},
        outputSchema: null,
        annotations: { destructive: true },
        run: () => null,
      }),
    ];
    [annotated, plain, tmp] = await Promise.all([
      listen(createServer({ tools, logger: false }), { port: 0 }),
      listen(createServer({ tools, logger: false, extensions: false }), { port: 0 }),
      mkdtemp(path.join(os.tmpdir(), "otc-cli-annotations-")),
    ]);
  });
  afterAll(async () => {
    await Promise.all([annotated?.close(), plain?.close(), tmp && rm(tmp, { recursive: true, force: true })]);
  });

  it("otc tools shows titles, hints and deprecations; a server without the extension gets the same table as before", async () => {
    expect(await otc(["tools", "--url", annotated.url])).toEqual({
      code: EXIT.ok,
      stdout:
        "Calculator\n" +
        "  Add              1.0.0          Add two numbers — Adds two numbers.  [read-only, idempotent, not open-world]\n" +
        "Greeting\n" +
        "  Hello            1.0.0, 2.0.0   Greets, version 2.0.0.\n" +
        "                                  1.0.0 is deprecated: Use Greeting.Hello@2.0.0, which speaks French too.\n" +
        "Mail\n" +
        "  Purge            1.0.0          Deletes every mail.  [destructive]\n",
      stderr: "",
    });
    expect(await otc(["tools", "--url", plain.url])).toEqual({
      code: EXIT.ok,
      stdout:
        "Calculator\n" +
        "  Add              1.0.0          Adds two numbers.\n" +
        "Greeting\n" +
        "  Hello            1.0.0, 2.0.0   Greets, version 2.0.0.\n" +
        "Mail\n" +
        "  Purge            1.0.0          Deletes every mail.\n",
      stderr: "",
    });
  });

  it("otc tools --json prints the annotated list as the server sent it", async () => {
    const { code, stdout } = await otc(["tools", "--json", "--url", annotated.url]);
    expect(code).toBe(EXIT.ok);
    const items = (JSON.parse(stdout) as { items: ToolDefinition[] }).items;
    const byId = new Map(items.map((item) => [item.id, item]));
    expect(byId.get("Calculator.Add@1.0.0")?.annotations).toEqual({
      title: "Add two numbers",
      read_only: true,
      idempotent: true,
      open_world: false,
    });
    expect(byId.get("Greeting.Hello@1.0.0")?.deprecation_message).toBe(
      "Use Greeting.Hello@2.0.0, which speaks French too.",
    );
    // Without the extension, the same list without the two fields.
    const bare = (JSON.parse((await otc(["tools", "--json", "--url", plain.url])).stdout) as { items: object[] }).items;
    for (const item of bare) {
      expect(item).not.toHaveProperty("annotations");
      expect(item).not.toHaveProperty("deprecation_message");
    }
    expect(items.map(({ annotations: _a, deprecation_message: _d, ...rest }) => rest)).toEqual(bare);
  });

  it("otc codegen from the server documents each annotated tool, a deprecation as @deprecated", async () => {
    const out = path.join(tmp, "annotated.ts");
    expect(await otc(["codegen", "--from", annotated.url, "--out", out])).toMatchObject({ code: EXIT.ok });
    const code = await readFile(out, "utf8");
    expect(code).toContain(
      "export interface Tools {\n" +
        "  /**\n" +
        "   * Title: Add two numbers\n" +
        "   * Hints, not guarantees: read-only, idempotent, not open-world.\n" +
        "   */\n" +
        '  "Calculator.Add@1.0.0": { input: CalculatorAddV1_0_0Input; output: CalculatorAddV1_0_0Output };\n' +
        "  /**\n" +
        "   * @deprecated Use Greeting.Hello@2.0.0, which speaks French too.\n" +
        "   */\n" +
        '  "Greeting.Hello@1.0.0": { input: GreetingHelloV1_0_0Input; output: GreetingHelloV1_0_0Output };\n' +
        '  "Greeting.Hello@2.0.0": { input: GreetingHelloV2_0_0Input; output: GreetingHelloV2_0_0Output };\n' +
        "  /**\n" +
        "   * Hints, not guarantees: destructive.\n" +
        "   */\n" +
        '  "Mail.Purge@1.0.0": { input: MailPurgeV1_0_0Input; output: MailPurgeV1_0_0Output };\n' +
        "}\n",
    );
    // Without the extension, the bindings are what they were before annotations.
    const bare = path.join(tmp, "bare.ts");
    expect(await otc(["codegen", "--from", plain.url, "--out", bare])).toMatchObject({ code: EXIT.ok });
    const tools = await otc(["tools", "--json", "--url", plain.url]);
    const catalog = path.join(tmp, "catalog.json");
    await writeFile(catalog, tools.stdout);
    const fromFile = path.join(tmp, "from-file.ts");
    expect(await otc(["codegen", "--from", catalog, "--out", fromFile])).toMatchObject({ code: EXIT.ok });
    const withoutHeader = (text: string) => text.replace(/^.*\n/, "");
    expect(withoutHeader(await readFile(bare, "utf8"))).toBe(withoutHeader(await readFile(fromFile, "utf8")));
    expect(await readFile(bare, "utf8")).not.toContain("/**\n   *");
  });
});

/** A loopback server answering with `handle` (given the request's body), recording each request's method, path and headers. */
async function rawServer(handle: (req: IncomingMessage, res: ServerResponse, body: string) => unknown) {
  const hits: { method: string; url: string; headers: IncomingMessage["headers"] }[] = [];
  const server = createHttpServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) {
      chunks.push(chunk as Buffer);
    }
    hits.push({ method: req.method ?? "", url: req.url ?? "", headers: req.headers });
    await handle(req, res, Buffer.concat(chunks).toString());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const close = () =>
    new Promise<void>((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return { url, hits, close };
}

/** What a terminal would act on: C0 controls but \n and \t, DEL, C1 controls, bidi controls. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: finding control characters is the point.
const RAW_CONTROLS = /[\u0000-\u0008\u000b-\u001f\u007f-\u009f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069]/;

describe("terminalSafe", () => {
  it("writes ESC, CR, BEL, DEL, C1 (the 8-bit CSI) and bidi controls as visible escapes; keeps \\n, \\t and other text", () => {
    expect(terminalSafe("\u001b[2Jgone\rback\u0007\u007f\u009b31m\u202eevil\u2066")).toBe(
      "\\u001b[2Jgone\\u000dback\\u0007\\u007f\\u009b31m\\u202eevil\\u2066",
    );
    expect(terminalSafe("line\n\tindented: é, 日本, 🙂")).toBe("line\n\tindented: é, 日本, 🙂");
  });

  it("keeps JSON valid and equal in meaning", () => {
    const value = { text: "\u009b2J \u202e \u007f \u001b]8;;http://evil.example\u001b\\link\u001b]8;;\u001b\\" };
    const printed = terminalSafe(JSON.stringify(value, null, 2));
    expect(printed).not.toMatch(RAW_CONTROLS);
    expect(JSON.parse(printed)).toEqual(value);
  });
});

describe("a hostile server", () => {
  // ESC[2J clears the screen, OSC 8 makes a link, \r rewrites the line, U+009B is an 8-bit CSI, U+202E reverses text.
  const CLEAR = "\u001b[2J";
  const LINK = "\u001b]8;;https://evil.example\u0007click\u001b]8;;\u0007";
  const HOSTILE = `${CLEAR}${LINK}\rfake line\u009b31m\u202eesrever`;
  const hostileTool = {
    id: "Evil.Tool@1.0.0",
    name: "Evil_Tool",
    version: "1.0.0",
    description: `Looks harmless.${HOSTILE}`,
    input_schema: { type: "object", properties: {} },
    output_schema: null,
    requirements: { secrets: [{ id: `KEY${CLEAR}` }], authorization: [{ id: `google${LINK}` }] },
  };

  it("cannot steer the terminal through otc tools, otc call or their errors, in text or --json", async () => {
    const server = await rawServer((req, res, body) => {
      if (req.url === "/.well-known/oxp") {
        // otc tools asks what the server offers first; this one is an OXP 1.0 server.
        return json(res, 404, { message: "Not found" });
      }
      if (req.url === "/tools") {
        return json(res, 200, { items: [hostileTool] });
      }
      // The tool id names the case: Evil.value, Evil.failure...
      const failing = (JSON.parse(body) as { tool_id: string }).tool_id.split(".")[1];
      if (failing === "value") {
        return json(res, 200, { call_id: "c", duration: 1, success: true, value: HOSTILE });
      }
      if (failing === "object") {
        return json(res, 200, { call_id: "c", duration: 1, success: true, value: { HOSTILE } });
      }
      if (failing === "failure") {
        const error = { message: HOSTILE, developer_message: HOSTILE, additional_prompt_content: HOSTILE };
        return json(res, 200, { call_id: `c${CLEAR}`, duration: 1, success: false, error });
      }
      if (failing === "invalid") {
        return json(res, 422, { message: HOSTILE, parameter_errors: { [HOSTILE]: HOSTILE } });
      }
      if (failing === "unauthorized") {
        return json(res, 401, { message: HOSTILE, developer_message: HOSTILE });
      }
      if (failing === "text") {
        return res.writeHead(404).end(HOSTILE);
      }
      return json(res, 400, { message: HOSTILE, developer_message: HOSTILE });
    });
    try {
      const outputs: string[] = [];
      for (const args of [["tools"], ["tools", "--json"]]) {
        const result = await otc([...args, "--url", server.url]);
        expect(result.code).toBe(EXIT.ok);
        outputs.push(result.stdout, result.stderr);
        expect(result.stdout).toContain("Looks harmless.\\u001b[2J");
      }
      const cases: [string, number][] = [
        ["value", EXIT.ok],
        ["object", EXIT.ok],
        ["failure", EXIT.toolFailed],
        ["invalid", EXIT.invalidInput],
        ["unauthorized", EXIT.authentication],
        ["refused", EXIT.refused],
        ["text", EXIT.protocol],
      ];
      for (const [kind, exit] of cases) {
        for (const extra of [[], ["--json"]]) {
          const result = await otc(["call", `Evil.${kind}`, ...extra], { OXP_URL: server.url });
          expect([kind, result.code]).toEqual([kind, exit]);
          outputs.push(result.stdout, result.stderr);
        }
      }
      const all = outputs.join("");
      expect(all).not.toMatch(RAW_CONTROLS);
      expect(all).toContain("\\u009b31m");
      expect(all).toContain("\\u202eesrever");
    } finally {
      await server.close();
    }
  });

  it("cannot steer the terminal through the titles and deprecation messages it offers", async () => {
    const server = await rawServer((req, res) => {
      if (req.url === "/.well-known/oxp") {
        return json(res, 200, { oxp_versions: ["1.0"], extensions: ["annotations"] });
      }
      if (req.url === "/tools") {
        const annotations = { title: `Title${HOSTILE}`, read_only: true };
        return json(res, 200, { items: [{ ...hostileTool, annotations, deprecation_message: `Gone.${HOSTILE}` }] });
      }
      return json(res, 404, { message: "Not found" });
    });
    try {
      const outputs: string[] = [];
      for (const args of [["tools"], ["tools", "--json"]]) {
        const result = await otc([...args, "--url", server.url]);
        expect(result.code).toBe(EXIT.ok);
        expect(result.stdout).toContain("Title\\u001b[2J");
        expect(result.stdout).toContain("Gone.\\u001b[2J");
        outputs.push(result.stdout, result.stderr);
      }
      expect(outputs.join("")).not.toMatch(RAW_CONTROLS);
      // It asked for the extension the discovery document listed, and for nothing else.
      expect(server.hits.map((hit) => [hit.url, hit.headers["oxp-extensions"]])).toEqual([
        ["/.well-known/oxp", undefined],
        ["/tools", "annotations"],
        ["/.well-known/oxp", undefined],
        ["/tools", "annotations"],
      ]);
    } finally {
      await server.close();
    }
  });

  it("otc tools: an endless answer ends in exit 7 and a clear message, read only to the client's limit", async () => {
    let written = 0;
    const server = await rawServer((_req, res) =>
      endlessToolList(res, 100 * 1024 * 1024, (total) => {
        written = total;
      }),
    );
    try {
      const result = await otc(["tools", "--url", server.url]);
      expect(result).toEqual({
        code: EXIT.protocol,
        stdout: "",
        stderr: `The server's answer is too large: otc stopped reading it after 16777216 bytes (${server.url})\n`,
      });
      expect(written).toBeLessThan(48 * 1024 * 1024);
    } finally {
      await server.close();
    }
  });

  it("otc tools and otc call: a redirect to another origin ends in exit 7, and nothing reaches that origin", async () => {
    const elsewhere = await rawServer((_req, res) => json(res, 200, { items: [] }));
    const server = await rawServer((req, res) => res.writeHead(307, { location: `${elsewhere.url}${req.url}` }).end());
    try {
      const env = { OXP_URL: server.url, OXP_API_KEY: "key-for-the-server-only" };
      for (const args of [["tools"], ["call", "Evil.Tool", "--secret", "K=secret-for-the-server-only"]]) {
        const { code, stdout, stderr } = await otc(args, env);
        expect({ code, stdout }).toEqual({ code: EXIT.protocol, stdout: "" });
        expect(stderr).toContain(`Refused to follow the server elsewhere: `);
        expect(stderr).toContain(`redirected (307) from ${server.url} to ${elsewhere.url}`);
        expect(stderr).not.toContain("key-for-the-server-only");
        expect(stderr).not.toContain("secret-for-the-server-only");
      }
      expect(elsewhere.hits).toEqual([]);
    } finally {
      await Promise.all([server.close(), elsewhere.close()]);
    }
  });

  it("otc call --wait-auth does not poll a check_url on another origin (exit 5)", async () => {
    const elsewhere = await rawServer((_req, res) => json(res, 200, { status: "completed" }));
    const server = await rawServer((_req, res) =>
      json(res, 400, {
        message: "Authorization required",
        missing_requirements: {
          authorization: [{ id: "google", url: `${elsewhere.url}/consent`, check_url: `${elsewhere.url}/status` }],
        },
      }),
    );
    try {
      const { code, stderr } = await otc(["call", "Mail.Read", "--wait-auth"], {
        OXP_URL: server.url,
        OXP_API_KEY: "key-for-the-server-only",
      });
      expect(code).toBe(EXIT.refused);
      expect(stderr).toBe(
        `Authorization required. Open this URL to continue:\n  ${elsewhere.url}/consent\n` +
          `Not waiting: the authorization's check_url (${elsewhere.url}/status) is not on the server's origin, and polling it would send it your credentials. Complete the authorization, then run the call again.\n`,
      );
      expect(elsewhere.hits).toEqual([]);
      expect(server.hits).toHaveLength(1);
    } finally {
      await Promise.all([server.close(), elsewhere.close()]);
    }
  });
});

describe("JWTs otc signs", () => {
  it("carry a sub: otc-cli by default, else OXP_JWT_SUBJECT or --jwt-subject; an empty --jwt-subject is a usage error", async () => {
    const server = await rawServer((_req, res) => json(res, 200, { items: [] }));
    const subjects: unknown[] = [];
    const sign = async (args: string[], env: Record<string, string> = {}) => {
      const result = await otc(["tools", "--url", server.url, ...args], { OXP_JWT_SECRET: "a-secret-for-otc", ...env });
      expect(result.code).toBe(EXIT.ok);
      const token = (server.hits.at(-1)?.headers.authorization ?? "").replace(/^Bearer /, "");
      subjects.push(decodeJwt(token).sub);
    };
    try {
      await sign([]);
      await sign([], { OXP_JWT_SUBJECT: "from-env" });
      await sign(["--jwt-subject", "from-flag"], { OXP_JWT_SUBJECT: "from-env" });
      expect(subjects).toEqual([DEFAULT_JWT_SUBJECT, "from-env", "from-flag"]);
      expect(DEFAULT_JWT_SUBJECT).toBe("otc-cli");
      const empty = await otc(["tools", "--url", server.url, "--jwt-subject="], { OXP_JWT_SECRET: "s" });
      expect(empty.code).toBe(EXIT.usage);
      expect(empty.stderr).toContain("--jwt-subject must not be empty");
    } finally {
      await server.close();
    }
  });
});
