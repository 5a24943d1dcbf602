// The published packages as a user gets them: `npm pack` of each, installed in a project outside the
// repository (with each agent framework @otc/ai adapts, at the version packages/ai pins), strict TypeScript
// programs type-checked against them (skipLibCheck: false) and run, their bins run, and publint and attw (are
// the types wrong) on every tarball.
import { execFile } from "node:child_process";
import { constants } from "node:fs";
import { access, mkdir, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { createDemoHandler } from "@otc/demo/handler";
import { listen, type RunningServer } from "@otc/server";
import { afterAll, beforeAll, describe, expect, it } from "vitest";

const here = path.dirname(fileURLToPath(import.meta.url));
const repoRoot = path.resolve(here, "../../..");

/** Every publishable package, by name, with its folder. */
const PACKAGES = {
  "@otc/types": "packages/types",
  "@otc/server": "packages/server",
  "@otc/client": "packages/client",
  "@otc/cli": "packages/cli",
  "@otc/conformance": "packages/conformance",
  "@otc/mcp": "packages/mcp",
  "@otc/redis": "packages/redis",
  "@otc/inspector": "packages/inspector",
  "@otc/ai": "packages/ai",
} as const;
type PackageName = keyof typeof PACKAGES;
const names = Object.keys(PACKAGES) as PackageName[];

/**
 * The runtime exports of every entry point, sorted: the public API. A change here is a change of the
 * packages' contract with their users; internals stay out (each index.ts says so).
 */
const PUBLIC_API: Record<string, string[]> = {
  "@otc/types": [
    "AUTHORIZATION_CHALLENGES_PATH_TEMPLATE",
    "AuthorizationChallengeCheckResponseSchema",
    "CHALLENGE_STATUSES",
    "CallProgressSchema",
    "CallStatusSchema",
    "CallToolEnvelopeSchema",
    "CallToolRequestSchema",
    "CallToolResponseSchema",
    "CallToolResultEnvelopeSchema",
    "DiscoveryDocumentSchema",
    "ENVELOPE_SCHEMA",
    "ENVELOPE_SCHEMA_PATTERN",
    "HEALTH_PATH",
    "OXP_ROUTES",
    "OXP_VERSION",
    "SUPPORTED_OXP_VERSIONS",
    "ServerErrorResponseSchema",
    "TOOLS_CALLS_EVENTS_PATH_TEMPLATE",
    "TOOLS_CALLS_PATH_TEMPLATE",
    "TOOLS_CALL_PATH",
    "TOOLS_PATH",
    "ToolAnnotationsSchema",
    "ToolAuthorizationChallengeSchema",
    "ToolDefinitionSchema",
    "ToolErrorSchema",
    "ToolIdSchema",
    "ToolListResponseSchema",
    "ToolRequirementsSchema",
    "ToolVersionSchema",
    "ValidationErrorResponseSchema",
    "WELL_KNOWN_OXP_PATH",
    "allSchemas",
    "compareToolVersions",
    "constantTimeEqual",
    "formatSchemaErrors",
    "formatToolId",
    "openapiDocument",
    "parseBearer",
    "parseToolId",
    "requestedToolVersion",
    "resolveToolVersion",
    "unwrapInputSchema",
    "validateAuthorizationChallengeCheckResponse",
    "validateCallProgress",
    "validateCallStatus",
    "validateCallToolEnvelope",
    "validateCallToolRequest",
    "validateCallToolResponse",
    "validateCallToolResultEnvelope",
    "validateDiscoveryDocument",
    "validateServerErrorResponse",
    "validateToolAnnotations",
    "validateToolAuthorizationChallenge",
    "validateToolDefinition",
    "validateToolError",
    "validateToolId",
    "validateToolListResponse",
    "validateToolRequirements",
    "validateToolVersion",
    "validateValidationErrorResponse",
  ],
  "@otc/types/ajv": ["STRING_FORMATS", "createAjv"],
  "@otc/server": [
    "CHALLENGE_STORE_DEFAULTS",
    "ChallengeStoreFullError",
    "DEFAULT_DURATION_BUCKETS",
    "IdempotencyStoreFullError",
    "MemoryChallengeStore",
    "MemoryIdempotencyStore",
    "MemoryTokenStore",
    "OxpToolError",
    "ServerConfigError",
    "TRACER_NAME",
    "WireError",
    "challengeOwnerKey",
    "challengeStoreBounds",
    "consoleLogger",
    "createHandler",
    "createLogger",
    "createServer",
    "createTelemetry",
    "defineTool",
    "listen",
    "systemClock",
  ],
  "@otc/server/node": [
    "CHALLENGE_STORE_DEFAULTS",
    "ChallengeStoreFullError",
    "DEFAULT_DURATION_BUCKETS",
    "IdempotencyStoreFullError",
    "MemoryChallengeStore",
    "MemoryIdempotencyStore",
    "MemoryTokenStore",
    "OxpToolError",
    "ServerConfigError",
    "TRACER_NAME",
    "WireError",
    "challengeOwnerKey",
    "challengeStoreBounds",
    "consoleLogger",
    "createHandler",
    "createLogger",
    "createTelemetry",
    "defineTool",
    "listen",
    "systemClock",
  ],
  "@otc/server/fetch": [
    "CHALLENGE_STORE_DEFAULTS",
    "ChallengeStoreFullError",
    "IdempotencyStoreFullError",
    "MemoryChallengeStore",
    "MemoryIdempotencyStore",
    "MemoryTokenStore",
    "OxpToolError",
    "ServerConfigError",
    "WireError",
    "challengeOwnerKey",
    "challengeStoreBounds",
    "consoleLogger",
    "createFetchHandler",
    "defineTool",
    "systemClock",
  ],
  "@otc/server/express": ["createServer"],
  "@otc/server/core": [
    "OxpCore",
    "WIRE_ERROR_STATUS",
    "checkDepth",
    "consoleLogger",
    "everyOn",
    "isEnvelope",
    "parseCallBody",
    "sleepOn",
    "systemClock",
    "unrefTimer",
    "unwrapCallBody",
    "wrapResponse",
  ],
  "@otc/client": [
    "DEFAULT_MAX_RESPONSE_BYTES",
    "MAX_REDIRECTS",
    "MAX_WAIT_SECONDS",
    "OxpAuthenticationError",
    "OxpConnectionError",
    "OxpCrossOriginError",
    "OxpError",
    "OxpExtensionUnavailableError",
    "OxpLocalError",
    "OxpModelCallError",
    "OxpProtocolError",
    "OxpResponseError",
    "OxpResponseTooLargeError",
    "OxpServerError",
    "OxpTimeoutError",
    "OxpToolCallError",
    "OxpValidationError",
    "bindAsyncTools",
    "bindTools",
    "createClient",
    "errorFromResponse",
    "fromModelToolCall",
    "latestVersions",
    "normalizeToolDefinition",
    "sameOrigin",
    "toAnthropicTools",
    "toModelText",
    "toOpenAITools",
  ],
  "@otc/cli": ["EXIT", "MCP_HELP", "generateBindings", "inspectCommand", "mcpCommand", "run", "typeNameOf"],
  "@otc/conformance": [
    "DEMO_FIXTURE_PATH",
    "formatResult",
    "loadFixture",
    "main",
    "runConformance",
    "scenarios",
    "summaryLine",
  ],
  "@otc/mcp": [
    "AUTHORIZATION_META_KEY",
    "ERROR_META_KEY",
    "MCP_TOOL_NAME",
    "MIN_TOKEN_LENGTH",
    "OXP_NAME",
    "SchemaConversionError",
    "TOOL_ID_META_KEY",
    "catalogToMcpTools",
    "createMcpBridge",
    "errorToCallToolResult",
    "inlineRefs",
    "isLoopbackHost",
    "isObjectSchema",
    "mcpToolName",
    "mcpTools",
    "oxpToolName",
    "serveHttp",
    "serveStdio",
    "toCallToolResult",
    "toMcpInputSchema",
    "toMcpOutput",
    "toOxpInputSchema",
    "toOxpOutputSchema",
    "toOxpValue",
  ],
  "@otc/redis": [
    "RedisChallengeStore",
    "RedisConnection",
    "RedisEvictionPolicyWarning",
    "RedisIdempotencyStore",
    "RedisTokenStore",
    "RedisUnavailableError",
    "createRedisState",
    "failFastOptions",
  ],
  "@otc/inspector": ["inspector", "inspectorPage", "readInspectorFiles"],
  "@otc/inspector/fetch": ["inspectorPage"],
  "@otc/ai": ["authorizationText", "invalidInputText", "oxpToolSpecs", "selectTools"],
  "@otc/ai/vercel": [
    "OxpToolCallError",
    "hasOxpAuthorizationChallenge",
    "oxpAuthorizationChallenges",
    "oxpToolApproval",
    "oxpTools",
  ],
  "@otc/ai/langchain": [
    "NEEDS_APPROVAL_TAG",
    "OXP_TAG",
    "isOxpAuthorizationRequest",
    "oxpInterruptOn",
    "oxpMetadata",
    "oxpTools",
  ],
  "@otc/ai/openai-agents": ["oxpOutputData", "oxpStopOnAuthorization", "oxpTools"],
};

/** What `npm pack --json` says of one tarball. */
interface PackResult {
  name: string;
  filename: string;
  files: { path: string; mode: number }[];
}

interface Manifest {
  bin?: Record<string, string>;
  scripts?: Record<string, string>;
  dependencies?: Record<string, string>;
  devDependencies?: Record<string, string>;
  peerDependencies?: Record<string, string>;
}

/** The version `manifest` pins for `name` among its devDependencies; a missing one is the test's error, not a guess. */
function pinned(manifest: Manifest, name: string, where: string): string {
  const version = manifest.devDependencies?.[name];
  if (!version) {
    throw new Error(`${where} has no devDependency ${name}`);
  }
  return version;
}

/**
 * The environment for child npm and node processes: without what an outer `npm test` sets for its
 * own package (npm_package_*, npm_lifecycle_*, npm_config_local_prefix, ...), which would point a
 * child npm back at the repository; the npm settings a machine needs to reach its registry are kept.
 */
const KEPT_NPM_SETTINGS = new Set(
  ["cache", "registry", "userconfig", "globalconfig", "cafile", "proxy", "https_proxy", "noproxy", "strict_ssl"].map(
    (key) => `npm_config_${key}`,
  ),
);
const childEnv = Object.fromEntries(
  Object.entries(process.env).filter(([key]) => !/^npm_/i.test(key) || KEPT_NPM_SETTINGS.has(key.toLowerCase())),
);

interface RunResult {
  code: number;
  stdout: string;
  stderr: string;
}

/**
 * Runs a command to its end; never rejects, so a test can show what a failing command printed. Killed past 280 s, a
 * guard against a hang within the test's own limit: a strict type-check of every package took 100 s on a busy machine.
 */
function run(file: string, args: string[], cwd: string): Promise<RunResult> {
  return new Promise((resolve) => {
    // real time: a kill for a hung child, not a wait; under the gate's 300 s so that its output is shown.
    const options = { cwd, env: childEnv, maxBuffer: 64 * 1024 * 1024, timeout: 280_000 };
    execFile(file, args, options, (error, stdout, stderr) => {
      const code = error ? (typeof error.code === "number" ? error.code : 1) : 0;
      resolve({ code, stdout, stderr: stderr || (error?.message ?? "") });
    });
  });
}

/** Like {@link run}, failing with the command's output when it does not exit 0. */
async function mustRun(file: string, args: string[], cwd: string): Promise<string> {
  const result = await run(file, args, cwd);
  if (result.code !== 0) {
    throw new Error(`${[file, ...args].join(" ")} exited ${result.code}:\n${result.stdout}\n${result.stderr}`);
  }
  return result.stdout;
}

const npm = (args: string[], cwd: string) => mustRun("npm", args, cwd);

let work: string;
let project: string;
/** The demo server, from the repository's sources: what the agent program's tools call. */
let demo: RunningServer;
const packed = new Map<PackageName, PackResult>();
const tarball = (name: PackageName) => path.join(work, "packs", packed.get(name)?.filename ?? "missing.tgz");

beforeAll(async () => {
  work = await mkdtemp(path.join(os.tmpdir(), "otc-packaging-"));
  await mkdir(path.join(work, "packs"));
  // turbo built every package before this test (`^build`); --ignore-scripts skips `prepack`, which
  // would rebuild dist/ while other suites read it.
  const workspaces = names.flatMap((name) => ["--workspace", name]);
  const out = await npm(
    ["pack", "--ignore-scripts", "--json", "--pack-destination", path.join(work, "packs"), ...workspaces],
    repoRoot,
  );
  for (const result of JSON.parse(out) as PackResult[]) {
    packed.set(result.name as PackageName, result);
  }

  // A user's project, outside the repository: the tarballs plus the TypeScript and Node types the repo uses.
  project = path.join(work, "project");
  await mkdir(project);
  const root = JSON.parse(await readFile(path.join(repoRoot, "package.json"), "utf8")) as Manifest;
  // The server's optional peers (Express and its validator, prom-client) as a user of createServer and metrics adds them.
  const server = JSON.parse(await readFile(path.join(repoRoot, "packages/server/package.json"), "utf8")) as {
    peerDependencies: Record<string, string>;
  };
  // The agent frameworks @otc/ai adapts (its peers but @otc/client, packed here), at the versions its tests pin, and
  // zod, their own peer.
  const ai = JSON.parse(await readFile(path.join(repoRoot, "packages/ai/package.json"), "utf8")) as Manifest;
  const frameworks = [...Object.keys(ai.peerDependencies ?? {}).filter((name) => !name.startsWith("@otc/")), "zod"].map(
    (name) => [name, pinned(ai, name, "packages/ai/package.json")],
  );
  const dependencies = {
    ...server.peerDependencies,
    ...Object.fromEntries(frameworks),
    ...Object.fromEntries(names.map((name) => [name, `file:${tarball(name)}`])),
  };
  const devDependencies = Object.fromEntries(
    ["@types/node", "typescript"].map((name) => [name, pinned(root, name, "the root package.json")]),
  );
  await writeFile(
    path.join(project, "package.json"),
    `${JSON.stringify({ name: "otc-consumer", private: true, type: "module", dependencies, devDependencies }, null, 2)}\n`,
  );
  await writeFile(
    path.join(project, "tsconfig.json"),
    JSON.stringify({
      compilerOptions: {
        strict: true,
        skipLibCheck: false,
        module: "nodenext",
        moduleResolution: "nodenext",
        target: "es2022",
        types: ["node"],
        outDir: "out",
      },
      include: ["main.ts", "ai.ts"],
    }),
  );
  for (const program of ["main.ts", "ai.ts"]) {
    await writeFile(path.join(project, program), await readFile(path.join(here, "../consumer", program), "utf8"));
  }
  await npm(["install", "--no-audit", "--no-fund", "--prefer-offline"], project);
  demo = await listen(createDemoHandler({ logger: false }).app, { port: 0 });
});

afterAll(async () => {
  await demo?.close();
  if (work) {
    await rm(work, { recursive: true, force: true });
  }
});

describe("the tarballs", () => {
  it("hold the built code, its types, README and LICENSE, and no tests", () => {
    expect([...packed.keys()].sort()).toEqual([...names].sort());
    for (const [name, result] of packed) {
      const files = result.files.map((file) => file.path);
      for (const needed of ["package.json", "README.md", "LICENSE", "dist/index.js", "dist/index.d.ts"]) {
        expect(files, `${name} ships ${needed}`).toContain(needed);
      }
      expect(
        files.filter((file) => /\.test\.|(^|\/)test\//.test(file)),
        `${name} ships no tests`,
      ).toEqual([]);
    }
  });

  it("build in prepack, and their bins are executable launchers that are in the tarball", async () => {
    for (const [name, folder] of Object.entries(PACKAGES)) {
      const manifest = JSON.parse(await readFile(path.join(repoRoot, folder, "package.json"), "utf8")) as Manifest;
      expect(manifest.scripts?.prepack, name).toBeDefined();
      const result = packed.get(name as PackageName);
      for (const bin of Object.values(manifest.bin ?? {})) {
        const file = result?.files.find((entry) => entry.path === path.posix.normalize(bin));
        expect(file, `${name} ships its bin ${bin}`).toBeDefined();
        expect((file?.mode ?? 0) & 0o111, `${bin} is executable`).not.toBe(0);
      }
    }
  });
});

describe("a user's project with the packed packages", () => {
  it("type-checks programs using every package and each agent framework, with strict tsc and skipLibCheck: false", async () => {
    const tsc = path.join(project, "node_modules/typescript/bin/tsc");
    const result = await run(process.execPath, [tsc, "-p", "."], project);
    expect(`${result.stdout}${result.stderr}`).toBe("");
    expect(result.code).toBe(0);
  });

  it("runs it: the custom tool is listed and called", async () => {
    const out = await mustRun(process.execPath, ["out/main.js"], project);
    expect(JSON.parse(out)).toEqual({ tools: ["Text.Shout@1.0.0"], value: "HELLO!" });
  });

  it("installs one @otc/client, the user's, which @otc/ai uses (a peer), so that its errors are the user's classes", async () => {
    const ai = JSON.parse(await readFile(path.join(project, "node_modules/@otc/ai/package.json"), "utf8")) as Manifest;
    expect(ai.peerDependencies?.["@otc/client"]).toBeDefined();
    expect(ai.dependencies?.["@otc/client"]).toBeUndefined();
    await expect(access(path.join(project, "node_modules/@otc/ai/node_modules/@otc/client"))).rejects.toThrow();
    await access(path.join(project, "node_modules/@otc/client/package.json"), constants.R_OK);
  });

  it("runs the agent program: in each framework the model's call runs through OXP, a destructive tool waits", async () => {
    const out = await mustRun(process.execPath, ["out/ai.js", demo.url], project);
    expect(JSON.parse(out)).toEqual({
      vercel: [{ type: "json", value: 42 }],
      langchain: { content: "42", status: "success" },
      authorization: ["Gmail_GetEmails"],
      agents: "42",
      interruptOn: { SMS_Send: true },
      interrupted: ["SMS_Send"],
    });
  });

  it("loads @otc/ai/langchain without @langchain/langgraph (an optional peer): a challenge is then the model's message", async () => {
    // A resolve hook hides @langchain/langgraph, as in a project with @langchain/core alone.
    const hide = `export async function resolve(specifier, context, next) {
      if (specifier === "@langchain/langgraph" || specifier.startsWith("@langchain/langgraph/")) {
        throw Object.assign(new Error("Cannot find package " + specifier), { code: "ERR_MODULE_NOT_FOUND" });
      }
      return next(specifier, context);
    }`;
    const script = `import { register } from "node:module";
      register("data:text/javascript," + encodeURIComponent(${JSON.stringify(hide)}));
      const hidden = await import("@langchain/langgraph").then(() => false, () => true);
      const { oxpTools } = await import("@otc/ai/langchain");
      const { createClient } = await import("@otc/client");
      const client = createClient({ baseUrl: ${JSON.stringify(demo.url)} });
      const [gmail] = await oxpTools(client, { toolkits: ["Gmail"], userId: "no-langgraph" });
      const answer = await gmail.invoke({ id: "c", name: "Gmail_GetEmails", args: { query: "" }, type: "tool_call" });
      console.log(JSON.stringify({ hidden, status: answer.status, kind: answer.artifact.kind }));`;
    const out = await mustRun(process.execPath, ["--input-type=module", "-e", script], project);
    expect(JSON.parse(out)).toEqual({ hidden: true, status: "error", kind: "authorization" });
  });

  it("exposes exactly the public API of each entry point, nothing internal", async () => {
    const entries = Object.keys(PUBLIC_API);
    const script = `const entries = ${JSON.stringify(entries)};
      const out = {};
      for (const entry of entries) out[entry] = Object.keys(await import(entry)).sort();
      console.log(JSON.stringify(out));`;
    const out = await mustRun(process.execPath, ["--input-type=module", "-e", script], project);
    expect(JSON.parse(out)).toEqual(PUBLIC_API);
  });

  it("gets working otc and oxp-conformance commands", async () => {
    for (const command of ["otc", "oxp-conformance"]) {
      const result = await run(path.join(project, "node_modules/.bin", command), ["--help"], project);
      expect(result.code, `${command} --help: ${result.stderr}`).toBe(0);
      expect(result.stdout).toMatch(/Usage/);
    }
  });
});

describe("published-package lints", () => {
  /** A command installed in this workspace or the repository's root; never one fetched from a registry. */
  async function localBin(command: string): Promise<string> {
    for (const dir of [path.join(here, ".."), repoRoot]) {
      const file = path.join(dir, "node_modules/.bin", command);
      if (
        await access(file, constants.X_OK).then(
          () => true,
          () => false,
        )
      ) {
        return file;
      }
    }
    throw new Error(`${command} is not installed: run \`npm install\` at the repository root`);
  }

  /** Runs a lint command on every tarball at once: the failures, each with what the tool printed. */
  async function failures(command: string, args: (file: string) => string[]): Promise<string[]> {
    const bin = await localBin(command);
    const results = await Promise.all(
      names.map(async (name) => ({ name, result: await run(bin, args(tarball(name)), repoRoot) })),
    );
    return results
      .filter(({ result }) => result.code !== 0)
      .map(({ name, result }) => `${name}:\n${result.stdout}\n${result.stderr}`);
  }

  it("publint finds no error and no warning", async () => {
    expect(await failures("publint", (file) => ["run", "--strict", file])).toEqual([]);
  });

  it("attw finds no problem for ESM consumers (profile esm-only: these packages are ESM only)", async () => {
    const args = (file: string) => ["--profile", "esm-only", "--no-definitely-typed", "--format", "ascii", file];
    expect(await failures("attw", args)).toEqual([]);
  });
});
