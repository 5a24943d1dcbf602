/** The benchmark against the peers, in one run: our adapters (the fetch handler on Node, Bun and Deno too), the floor, Express, Fastify and the MCP SDK (v1 and v2) side by side. */
// Usage: `npm run bench` (builds, then the full run) or `node bench/run.mjs [--quick] [--rounds N] [--seconds S]
// [--warmup S] [--connections N] [--out FILE.md] [--no-cold] [--stacks ID,...] [--scenarios ID,...]`; the last two
// narrow a run to some stacks and scenarios (ids from bench/lib/scenarios.mjs), for working on one figure. Writes a Markdown report (bench/results/latest.md by
// default; bench/results/quick.md with --quick) and the same figures as JSON beside it. Exits non-zero when a
// stack cannot start or answers a scenario wrongly; the figures themselves never fail the run.
import { mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { ToolSearchIndex } from "@otc/server/core";
import { SignJWT } from "jose";
import { coldStart, wallTime } from "./lib/cold.mjs";
import { measure, median, pinCores, settled, startServer } from "./lib/harness.mjs";
import { launchDir, launchOf, runtimeVersion, startRuntimeServer } from "./lib/runtimes.mjs";
import {
  inRevision,
  notApplicable,
  QUICK_SCENARIOS,
  quickRuns,
  requestFor,
  RATIOS as SCENARIO_RATIOS,
  STACKS as SCENARIO_STACKS,
  SCENARIOS,
  SEARCH_QUERY,
} from "./lib/scenarios.mjs";
import { measureStdio, startStdioServer } from "./lib/stdio.mjs";
import { LARGE_CATALOG, SEARCH_CATALOG, searchDefinitions, wireToolList } from "./stacks/catalog.mjs";
import { OAUTH_RESOURCE, startIssuer } from "./stacks/oauth-issuer.mjs";
import { connectVaultUser, startVaultProvider, vaultConfig } from "./stacks/vault.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opts } = parseArgs({
  options: {
    quick: { type: "boolean", default: false },
    rounds: { type: "string" },
    seconds: { type: "string" },
    warmup: { type: "string" },
    connections: { type: "string", default: "50" },
    out: { type: "string" },
    "no-cold": { type: "boolean", default: false },
    stacks: { type: "string" },
    scenarios: { type: "string" },
  },
});
const QUICK = opts.quick;
// 5 rounds of 1.5 s: `npm run bench` stays under ten minutes with every row; ratios are taken within each round.
const ROUNDS = Number(opts.rounds ?? (QUICK ? 1 : 5));
const SECONDS = Number(opts.seconds ?? (QUICK ? 0.4 : 1.5));
const WARMUP = Number(opts.warmup ?? (QUICK ? 0.2 : 0.3));
// Before each measured window, this long at the same load, unmeasured: a server idle while the others were measured
// (a minute, for one that runs a single scenario) pays ~10% more in its first second, its young generation shrunk.
const PRIME = QUICK ? 0 : 0.2;
const CONNECTIONS = Number(opts.connections);
const OUT = opts.out ?? `${ROOT}bench/results/${QUICK ? "quick" : "latest"}.md`;
const COLD_RUNS = QUICK ? 1 : 3;
for (const [name, value] of Object.entries({ ROUNDS, SECONDS, CONNECTIONS })) {
  if (!(value > 0)) {
    throw new Error(`${name.toLowerCase()} must be a positive number`);
  }
}

// ---- the MCP peer on both SDK generations ---------------------------------------------------------------------------
// scenarios.mjs's `mcp` row is the v1 SDK (@modelcontextprotocol/sdk) answering 2025 requests, the row the ratios
// against MCP keep using. `mcp-v2` is the same peer and tools on the v2 SDK (@modelcontextprotocol/server) answering
// 2026-07-28 requests, as a v2 client sends them: the rows of `mcp`, its checks, the revision's envelope added.
const MODERN_REVISION = "2026-07-28";
const MCP_V2 = {
  id: "mcp-v2",
  label: `MCP SDK v2 (${MODERN_REVISION}, stateless HTTP)`,
  module: "mcp",
  mcp: true,
  sdk: "v2",
  revision: MODERN_REVISION,
  rowsOf: "mcp",
};
// The MCP bridge (`otc mcp serve --transport http`: serveHttp + createMcpBridge) in front of our native adapter, two
// processes whose CPU is summed (bench/stacks/mcp-bridge.mjs), sent what a v2 client sends: issue 36's row, beside
// `mcp-v2` in the `mcpBridge` scenario only (`partial`: no n/a rows elsewhere).
const MCP_BRIDGE = {
  id: "mcp-bridge",
  label: `MCP bridge over HTTP + OXP server (${MODERN_REVISION})`,
  module: "mcp-bridge",
  mcp: true,
  revision: MODERN_REVISION,
  partial: true,
};
// The same two over stdio (`stdio`: bench/lib/stdio.mjs drives them through their pipes, `--connections` requests in
// flight): the `mcpBridgeStdio` scenario.
const MCP_BRIDGE_STDIO = {
  ...MCP_BRIDGE,
  id: "mcp-bridge-stdio",
  label: `MCP bridge over stdio + OXP server (${MODERN_REVISION})`,
  stdio: true,
};
const MCP_V2_STDIO = {
  id: "mcp-v2-stdio",
  label: `MCP SDK v2 (${MODERN_REVISION}, stdio)`,
  module: "mcp",
  mcp: true,
  sdk: "v2",
  revision: MODERN_REVISION,
  partial: true,
  stdio: true,
};
const STACKS = SCENARIO_STACKS.flatMap((stack) =>
  stack.id === "mcp" ? [stack, MCP_V2, MCP_BRIDGE, MCP_V2_STDIO, MCP_BRIDGE_STDIO] : [stack],
);
const RATIOS = [
  ...SCENARIO_RATIOS,
  {
    label: `MCP SDK v2 (${MODERN_REVISION}) vs v1 (2025), CPU/call`,
    a: ["mcp-v2", "call"],
    b: ["mcp", "call"],
    metric: "cpu",
    fullOnly: true,
  },
  {
    label: `MCP bridge + the OXP server behind it vs a bare MCP SDK v2 server (${MODERN_REVISION}, HTTP), CPU/call`,
    a: ["mcp-bridge", "mcpBridge"],
    b: ["mcp-v2", "mcpBridge"],
    metric: "cpu",
    op: "<=",
    target: 1,
    fullOnly: true,
  },
  {
    label: `MCP bridge + the OXP server behind it vs a bare MCP SDK v2 server (${MODERN_REVISION}, stdio), CPU/call`,
    a: ["mcp-bridge-stdio", "mcpBridgeStdio"],
    b: ["mcp-v2-stdio", "mcpBridgeStdio"],
    metric: "cpu",
    op: "<=",
    target: 1,
    fullOnly: true,
  },
];
/** The stack whose scenarios a stack runs: its own, or `rowsOf`'s. */
const rowsId = (stack) => stack.rowsOf ?? stack.id;
/** The request of a scenario on a stack (scenarios.mjs's), in the stack's MCP revision when it has one. */
const requestOf = (stack, scenario, context) =>
  stack.revision
    ? inRevision(requestFor(stack, scenario, context), stack.revision)
    : requestFor(stack, scenario, context);

const problems = [];
const T0 = performance.now();
const log = (line) => process.stderr.write(`[${((performance.now() - T0) / 1000).toFixed(1)} s] ${line}\n`);
// Before pinning: once pinned, this process sees one core.
const CORES = os.availableParallelism();
const pinning = pinCores();
log(`bench: ${pinning.why}`);

// ---- which stacks run which scenarios, on which server processes --------------------------------------------------
const only = (list) => (list ? new Set(list.split(",")) : undefined);
const ONLY_STACKS = only(opts.stacks);
const ONLY_SCENARIOS = only(opts.scenarios);
const selected = SCENARIOS.filter(
  (scenario) => (!QUICK || QUICK_SCENARIOS.has(scenario.id)) && (!ONLY_SCENARIOS || ONLY_SCENARIOS.has(scenario.id)),
);
const runs = (scenario, stack) =>
  (scenario.stacks.includes(stack.id) || scenario.stacks.includes(rowsId(stack))) &&
  (!QUICK || quickRuns(scenario, rowsId(stack))) &&
  (!ONLY_STACKS || ONLY_STACKS.has(stack.id));
const AUTH = { apiKey: `bench-key-${process.pid}`, jwtSecret: `bench-secret-${process.pid}-0123456789abcdef` };
// The wire tool lists, built once here (only when a peer needs it: the 1,000-tool one takes seconds) and written
// for the peers to read (see peerToolList in bench/stacks/catalog.mjs).
const listDir = mkdtempSync(path.join(os.tmpdir(), "otc-bench-"));
process.on("exit", () => rmSync(listDir, { recursive: true, force: true }));
const lists = {};
const listFile = (catalog) => {
  lists[catalog] ??= wireToolList(catalog);
  const file = path.join(listDir, `${catalog}.json`);
  writeFileSync(file, JSON.stringify(lists[catalog]));
  return file;
};
const serverConfig = (stack, server) => {
  const catalog = server === "large" || server === "search" ? server : "demo";
  return {
    stack: stack.module,
    ...(stack.sdk ? { sdk: stack.sdk } : {}),
    catalog,
    ...(server === "auth" ? { auth: AUTH } : {}),
    ...(server.startsWith("oauth") ? { auth: AUTH, oauth: { issuer: issuer.url, resource: OAUTH_RESOURCE } } : {}),
    ...(server === "vault" ? { auth: AUTH, vault: vaultConfig(vaultProvider) } : {}),
    // Ours build their own list; so does the fetch handler on Node (the bench's catalog module).
    ...(stack.ours || stack.partial ? {} : { listFile: listFile(catalog) }),
  };
};

/** Servers by `${stack}/${server}`: every process stays up for the whole run, so rounds interleave. */
const servers = new Map();
const needed = new Set();
for (const scenario of selected) {
  for (const stack of STACKS) {
    if (runs(scenario, stack)) {
      needed.add(`${stack.id}/${scenario.server}`);
    }
  }
}
// The oauth rows' authorization server, in this process: the servers read its metadata and key set once.
const issuer = [...needed].some((key) => key.split("/")[1].startsWith("oauth")) ? await startIssuer() : undefined;
// The vault rows' provider, in this process too: each vault server's user connects through it once, before the probe.
const vaultProvider = [...needed].some((key) => key.split("/")[1] === "vault") ? await startVaultProvider() : undefined;
log(`bench: starting ${needed.size} server processes`);
await Promise.all(
  [...needed].map(async (key) => {
    const [stackId, server] = key.split("/");
    const stack = STACKS.find((candidate) => candidate.id === stackId);
    try {
      // Generous: a 1,000-tool server compiles 1,000 validators at start, on a machine busy starting the rest; a
      // 10,000-tool one about a minute's worth, two of them on the servers' one core.
      const timeoutMs = server === "search" ? 600_000 : 180_000;
      servers.set(
        key,
        stack.runtime
          ? await startRuntimeServer(pinning, stack.runtime, { timeoutMs })
          : stack.stdio
            ? await startStdioServer(pinning, serverConfig(stack, server), { timeoutMs })
            : await startServer(pinning, serverConfig(stack, server), { timeoutMs }),
      );
    } catch (error) {
      problems.push(`${stack.label} (${server}) did not start: ${error.message}`);
    }
  }),
);

// The vault rows' user connects an account on each vault server, through the server's code flow (bench/stacks/vault.mjs).
for (const [key, server] of servers) {
  if (key.endsWith("/vault")) {
    try {
      await connectVaultUser(server.url, AUTH.apiKey);
    } catch (error) {
      problems.push(`${key}: the vault's user could not connect: ${error.message}`);
    }
  }
}
/** What the vault's provider had been asked once every user connected: anything more was asked while measuring. */
const vaultProviderAtStart = vaultProvider && { ...vaultProvider.requests };

// ---- the search index's build, in this process -------------------------------------------------------------------------
// What a server offering search pays at start over the search rows' catalog (issue 33: under 500 ms), measured here
// once every server has started and idles on its core (they start on every core), before this process has served a
// window: the definitions as the server indexes them, one build to warm up, then the median of 5, wall and CPU time.
const SEARCH_BUILDS = 5;
const SEARCH_BUILD_TARGET_MS = 500;
let searchIndex;
if (selected.some((scenario) => scenario.server === "search")) {
  log(
    `bench: building the search index over ${SEARCH_CATALOG.toLocaleString("en-US")} tools, 1 + ${SEARCH_BUILDS} times`,
  );
  try {
    const definitions = searchDefinitions();
    // The definitions built here must be the ones the server indexed, or the time is not the server's.
    const served = [...servers].find(([key]) => key.endsWith("/search"))?.[1];
    if (served) {
      const answer = await fetch(`${served.url}/tools`, { headers: { "oxp-extensions": "annotations" } });
      if (JSON.stringify((await answer.json()).items) !== JSON.stringify(definitions)) {
        problems.push("search index build: the bench's definitions differ from the search server's list");
      }
    }
    new ToolSearchIndex(definitions);
    const builds = [];
    const cpuBuilds = [];
    for (let i = 0; i < SEARCH_BUILDS; i++) {
      const cpuBefore = process.cpuUsage();
      const started = performance.now();
      new ToolSearchIndex(definitions);
      builds.push(performance.now() - started);
      const cpu = process.cpuUsage(cpuBefore);
      cpuBuilds.push((cpu.user + cpu.system) / 1000);
    }
    const medianMs = median(builds);
    searchIndex = {
      tools: definitions.length,
      builds: builds.map((ms) => Math.round(ms * 10) / 10),
      medianMs,
      // This process's CPU over each build (GC helper threads included): what the build costs whatever else runs.
      cpuMedianMs: median(cpuBuilds),
      targetMs: SEARCH_BUILD_TARGET_MS,
      pass: medianMs < SEARCH_BUILD_TARGET_MS,
    };
  } catch (error) {
    problems.push(`search index build: ${error.message}`);
  }
}

const names = (catalog) => (lists[catalog] ? new Set(lists[catalog].items.map((item) => item.name)).size : undefined);
const ctx = {
  apiKey: AUTH.apiKey,
  jwt: "",
  accessToken: "",
  freshAccessToken: () => issuer?.freshToken() ?? "",
  vaultClientToken: vaultProvider?.clientToken ?? "",
  etags: new Map(),
  oxpTools: { demo: (lists.demo ?? wireToolList("demo")).items.length, large: LARGE_CATALOG, search: SEARCH_CATALOG },
  mcpTools: { demo: names("demo"), large: names("large") },
};
/** A token as an agent holds one: signed once, reused until it nears its exp (the server allows 15 minutes). */
let jwtSignedAt = 0;
async function refreshJwt() {
  if (Date.now() - jwtSignedAt < 10 * 60_000) {
    return;
  }
  jwtSignedAt = Date.now();
  ctx.jwt = await new SignJWT({ sub: "bench-agent" })
    .setProtectedHeader({ alg: "HS256" })
    .setExpirationTime("14m")
    .sign(new TextEncoder().encode(AUTH.jwtSecret));
}
await refreshJwt();
/** An OAuth access token as an agent holds one: issued once for an hour, reused; a new one after 45 minutes. */
let accessTokenIssuedAt = 0;
async function refreshAccessToken() {
  if (!issuer || Date.now() - accessTokenIssuedAt < 45 * 60_000) {
    return;
  }
  accessTokenIssuedAt = Date.now();
  ctx.accessToken = await issuer.accessToken(3_600);
}
await refreshAccessToken();
// The ETag rows run once the server sends one.
for (const [key, server] of servers) {
  if (server.url === "stdio:") {
    continue;
  }
  const etag = (await fetch(`${server.url}/tools`)).headers.get("etag");
  if (etag) {
    ctx.etags.set(key, etag);
  }
}

// ---- probe: one request per row, its answer checked, before anything is measured --------------------------------
/** The rows to measure: stack, scenario, server, request. */
const rows = [];
for (const scenario of selected) {
  for (const stack of STACKS) {
    if (!runs(scenario, stack)) {
      continue;
    }
    const server = servers.get(`${stack.id}/${scenario.server}`);
    if (!server) {
      continue;
    }
    const spec = requestOf(stack, scenario, ctx);
    if (!spec) {
      continue; // the 304 row before the server sends ETags
    }
    const { request } = spec;
    if (stack.stdio) {
      const problem = spec.check(await server.send(JSON.parse(request.body)));
      if (problem) {
        problems.push(`${stack.label}, ${scenario.label}: ${problem}`);
      } else {
        rows.push({ stack, scenario, server, spec, samples: [] });
      }
      continue;
    }
    const answer = await fetch(`${server.url}${request.path}`, {
      method: request.method,
      headers: request.headers,
      body: request.body,
    });
    const text = await answer.text();
    let body;
    try {
      body = text ? JSON.parse(text) : undefined;
    } catch {
      body = undefined;
    }
    const problem = answer.status !== spec.status ? `status ${answer.status}, not ${spec.status}` : spec.check(body);
    if (problem) {
      problems.push(`${stack.label}, ${scenario.label}: ${problem}: ${text.slice(0, 200)}`);
    } else {
      rows.push({ stack, scenario, server, spec, samples: [] });
    }
  }
}

// ---- warm-up, then interleaved rounds ------------------------------------------------------------------------------
const window = async (row, seconds) => {
  if (row.stack.stdio) {
    return measureStdio(row.server, JSON.parse(row.spec.request.body), {
      seconds,
      inFlight: CONNECTIONS,
      check: row.spec.check,
    });
  }
  const sample = await measure(row.server, row.spec.request, {
    seconds,
    connections: CONNECTIONS,
    expectStatus: row.spec.status,
  });
  if (row.scenario.settle) {
    await settled(row.server);
  }
  return sample;
};
log(`bench: warming up ${rows.length} rows, ${WARMUP} s each`);
for (const row of rows) {
  // A scenario may ask for longer (the MCP bridge's rows: its code takes seconds of load to be compiled).
  await window(row, QUICK ? WARMUP : Math.max(WARMUP, row.scenario.warmup ?? 0));
}
for (let round = 0; round < ROUNDS; round++) {
  log(`bench: round ${round + 1}/${ROUNDS}`);
  for (const scenario of selected) {
    const group = rows.filter((row) => row.scenario === scenario);
    // The order of stacks rotates each round: none always runs right after another's load.
    for (let i = 0; i < group.length; i++) {
      const row = group[(i + round) % group.length];
      if (row.scenario.id === "jwt") {
        await refreshJwt();
        row.spec = requestOf(row.stack, row.scenario, ctx);
      }
      if (row.scenario.id === "oauthToken") {
        await refreshAccessToken();
        row.spec = requestOf(row.stack, row.scenario, ctx);
      }
      if (PRIME > 0) {
        await window(row, PRIME);
      }
      row.samples[round] = await window(row, SECONDS);
    }
  }
}

// A strict scenario's answers must all be what its probe checked: a refused call must not pass for a fast one.
for (const row of rows) {
  const wrong = row.samples.reduce((sum, sample) => sum + (sample?.errors ?? 0), 0);
  if (row.scenario.strict && wrong > 0) {
    problems.push(`${row.stack.label}, ${row.scenario.label}: ${wrong} requests did not answer ${row.spec.status}`);
  }
}

// The vault rows measure the vault's lookup, opening and injection: no request of theirs may reach the provider.
const vaultProviderAsked = vaultProvider
  ? Object.entries(vaultProvider.requests).reduce((sum, [name, count]) => sum + count - vaultProviderAtStart[name], 0)
  : 0;
if (vaultProviderAsked > 0) {
  problems.push(`the vault's provider was asked ${vaultProviderAsked} request(s) once the users had connected`);
}

// ---- cold start and build times -------------------------------------------------------------------------------------
const DEMO = `${ROOT}apps/demo/dist/main.js`;
const demoHasAdapterSwitch = (() => {
  try {
    return readFileSync(DEMO, "utf8").includes("OXP_ADAPTER");
  } catch {
    return false;
  }
})();
const cold = [];
if (!opts["no-cold"]) {
  const variants = [
    { label: "demo, Express adapter (`node apps/demo/dist/main.js`)", env: {} },
    demoHasAdapterSwitch
      ? { label: "demo, native adapter (`OXP_ADAPTER=node`)", env: { OXP_ADAPTER: "node" } }
      : { label: "demo, native adapter (`OXP_ADAPTER=node`)", skip: "n/a: the demo has no OXP_ADAPTER switch yet" },
  ];
  for (const variant of variants) {
    if (variant.skip) {
      cold.push({ label: variant.label, note: variant.skip });
      continue;
    }
    log(`bench: cold start, ${variant.label}`);
    const samples = [];
    try {
      for (let i = 0; i < COLD_RUNS; i++) {
        samples.push(
          await coldStart(pinning, {
            command: process.execPath,
            args: [DEMO],
            env: { LOG_LEVEL: "warn", ...variant.env },
          }),
        );
      }
      cold.push({
        label: variant.label,
        runs: samples.length,
        healthMs: median(samples.map((sample) => sample.healthMs)),
        callMs: median(samples.map((sample) => sample.callMs)),
      });
    } catch (error) {
      problems.push(`cold start, ${variant.label}: ${error.message}`);
    }
  }
  if (!QUICK) {
    // The same demo catalog on every runtime, spawn to first answer; workerd's bundle is built before its clock starts.
    const entries = [
      ["node-adapter", "node adapter on Node (`createHandler` + `listen`, `@otc/server/node`)"],
      ["node-bridge", "fetch handler on Node (@hono/node-server `serve`)"],
      ["bun", `fetch handler on Bun ${runtimeVersion("bun")} (\`Bun.serve\`)`],
      ["deno", `fetch handler on Deno ${runtimeVersion("deno")} (\`Deno.serve\`)`],
      ["workerd", `fetch handler on workerd ${runtimeVersion("workerd")} (esbuild bundle; built on the first request)`],
    ];
    for (const [runtime, label] of entries) {
      log(`bench: cold start, ${runtime}`);
      const samples = [];
      try {
        for (let i = 0; i < COLD_RUNS; i++) {
          const { dir, remove } = launchDir(runtime);
          try {
            const launch = await launchOf(runtime, dir);
            samples.push(
              await coldStart(pinning, {
                command: launch.command,
                args: launch.args,
                cwd: dir,
                env: { NO_COLOR: "1", ...launch.env },
                controlFd: launch.controlFd,
              }),
            );
          } finally {
            remove();
          }
        }
        cold.push({
          label,
          runs: samples.length,
          healthMs: median(samples.map((sample) => sample.healthMs)),
          callMs: median(samples.map((sample) => sample.callMs)),
        });
      } catch (error) {
        problems.push(`cold start, ${runtime}: ${error.message}`);
      }
    }
    log("bench: cold start, npm start");
    try {
      const npmStart = await coldStart(pinning, {
        command: "npm",
        args: ["start"],
        cwd: ROOT,
        env: { LOG_LEVEL: "warn" },
        group: true,
        timeoutMs: 180_000,
      });
      cold.push({ label: "`npm start` on a built tree (turbo build check included)", runs: 1, ...npmStart });
    } catch (error) {
      problems.push(`cold start, npm start: ${error.message}`);
    }
  }
}
const buildTimes = [];
// With the cold starts: `--no-cold` runs no build either (a narrowed run in a tree that others are editing).
if (!QUICK && !opts["no-cold"]) {
  const env = { ...process.env, TURBO_TELEMETRY_DISABLED: "1" };
  for (const [label, command, args] of [
    ["`npm run generate`", "npm", ["run", "generate"]],
    ["`npx turbo run build`, nothing changed", "npx", ["turbo", "run", "build", "--output-logs=errors-only"]],
  ]) {
    log(`bench: timing ${label}`);
    try {
      buildTimes.push({ label, ms: wallTime(command, args, { cwd: ROOT, env }) });
    } catch (error) {
      problems.push(`${label}: ${error.message}`);
    }
  }
}

for (const server of servers.values()) {
  await server.stop();
}
await issuer?.stop();
await vaultProvider?.stop();

// ---- figures --------------------------------------------------------------------------------------------------------
const results = rows.map((row) => {
  const samples = row.samples.filter(Boolean);
  return {
    stack: row.stack.id,
    stackLabel: row.stack.label,
    scenario: row.scenario.id,
    scenarioLabel: row.scenario.label,
    rounds: samples.length,
    rps: median(samples.map((sample) => sample.rps)),
    p50: median(samples.map((sample) => sample.p50)),
    p99: median(samples.map((sample) => sample.p99)),
    cpuUs: median(samples.map((sample) => sample.cpuUs)),
    rssMb: Math.max(...samples.map((sample) => sample.rssMb)),
    errors: samples.reduce((sum, sample) => sum + sample.errors, 0),
    // A stack of several processes: each one's CPU per call, median over the rounds.
    ...(samples[0]?.partsUs
      ? {
          partsUs: Object.fromEntries(
            Object.keys(samples[0].partsUs).map((name) => [
              name,
              median(samples.map((sample) => sample.partsUs?.[name])),
            ]),
          ),
        }
      : {}),
    samples,
  };
});
const rowOf = (stack, scenario) => rows.find((row) => row.stack.id === stack && row.scenario.id === scenario);
// A run narrowed with --stacks or --scenarios leaves out the ratios of the rows it did not select.
const narrowedOut = ([stackId, scenarioId]) =>
  (ONLY_STACKS !== undefined && !ONLY_STACKS.has(stackId)) ||
  (ONLY_SCENARIOS !== undefined && !ONLY_SCENARIOS.has(scenarioId));
const ratios = RATIOS.filter(
  (ratio) => (!QUICK || !(ratio.diagnostic || ratio.fullOnly)) && !narrowedOut(ratio.a) && !narrowedOut(ratio.b),
).map((ratio) => {
  const a = rowOf(...ratio.a);
  const b = rowOf(...ratio.b);
  const within = (metric) =>
    median(
      Array.from({ length: ROUNDS }, (_, round) => {
        const x = a?.samples[round];
        const y = b?.samples[round];
        if (!x || !y) {
          return Number.NaN;
        }
        return metric === "cpu" ? x.cpuUs / y.cpuUs : x.rps / y.rps;
      }),
    );
  const value = within(ratio.metric);
  const other = within(ratio.metric === "cpu" ? "rps" : "cpu");
  const judged = ratio.target !== undefined && Number.isFinite(value);
  const pass = judged ? (ratio.op === "<=" ? value <= ratio.target : value >= ratio.target) : undefined;
  if (!Number.isFinite(value)) {
    problems.push(`ratio ${ratio.label}: not measured`);
  }
  return { label: ratio.label, metric: ratio.metric, value, other, op: ratio.op, target: ratio.target, pass };
});

// ---- report ---------------------------------------------------------------------------------------------------------
const version = (name) => {
  try {
    return JSON.parse(readFileSync(`${ROOT}node_modules/${name}/package.json`, "utf8")).version;
  } catch {
    return "?";
  }
};
const fixed = (value, digits = 0) =>
  Number.isFinite(value)
    ? value.toLocaleString("en-US", { maximumFractionDigits: digits, minimumFractionDigits: digits })
    : "-";
const cpu = os.cpus();
const lines = [
  `# OXP server benchmark${QUICK ? " (--quick: a smoke run, not figures to quote)" : ""}`,
  "",
  `- Date: ${new Date().toISOString()}`,
  `- Machine: ${cpu[0]?.model ?? "unknown CPU"}, ${CORES} cores, ${(os.totalmem() / 2 ** 30).toFixed(1)} GiB, ${os.type()} ${os.release()}`,
  `- Node ${process.version}; autocannon ${version("autocannon")}, express ${version("express")}, express-openapi-validator ${version("express-openapi-validator")}, fastify ${version("fastify")}, @modelcontextprotocol/sdk ${version("@modelcontextprotocol/sdk")}, @modelcontextprotocol/server ${version("@modelcontextprotocol/server")}, ajv ${version("ajv")}, @hono/node-server ${version("@hono/node-server")}; Bun ${runtimeVersion("bun")}, Deno ${runtimeVersion("deno")}`,
  `- Load: autocannon on 127.0.0.1, ${CONNECTIONS} connections; warm-up ${WARMUP} s per row, then ${ROUNDS} interleaved round(s) x ${SECONDS} s${PRIME > 0 ? `, each window right after ${PRIME} s of the same load, unmeasured` : ""}; medians over rounds`,
  `- Pinning: ${pinning.why}`,
  "- Native adapter: `createHandler` + `listen` from @otc/server",
  ...(issuer
    ? [
        `- OAuth rows: ES256 access tokens (RFC 9068) from an authorization server in the bench's process; over the run the servers read its metadata ${issuer.fetches.metadata} time(s) and its key set ${issuer.fetches.jwks} time(s); the worst-case row's tokens are minted in the load generator, one per request`,
      ]
    : []),
  ...(vaultProvider
    ? [
        `- Vault rows: the user connected once per server through its code flow with PKCE against a provider in the bench's process (${vaultProvider.requests.metadata} metadata read(s), ${vaultProvider.requests.code} code exchange(s) in all); its access token lives an hour, sealed (AES-256-GCM) in the server's in-memory store (\`MemoryConnectionStore\`); from then on, calls included, the provider was asked ${vaultProviderAsked} request(s)`,
      ]
    : []),
  `- ETag on GET /tools: ${ctx.etags.size > 0 ? `sent by ${[...new Set([...ctx.etags.keys()].map((key) => key.split("/")[0]))].join(", ")}` : "not sent yet, so no 304 row"}`,
  "- CPU/req: the server's own process.cpuUsage() (user + system) over the window, read in the server over IPC, divided by the answers; peak RSS: the server process's maxRSS. Bun and Deno: the process's utime + stime and VmHWM from /proc (10 ms ticks)",
  "- Catalogs: the demo's (" +
    `${ctx.oxpTools.demo} tools) or ${ctx.oxpTools.large} (the demo's plus generated ones)${selected.some((scenario) => scenario.server === "search") ? `; the search rows' ${fixed(ctx.oxpTools.search)} (the demo's plus generated ones of varied text, bench/stacks/search-catalog.mjs; query \`${SEARCH_QUERY}\`)` : ""}; our servers log one JSON line per call to /dev/null (stdout), as deployed: pino's line (\`createLogger\`) on Node, the fetch handler included; consoleLogger's (its default off Node) on Bun and Deno`,
  "",
  "## Ratios (median of the per-round ratios)",
  "",
  "| ratio | value | target | | other metric |",
  "| --- | ---: | ---: | :---: | ---: |",
  ...ratios.map(
    (ratio) =>
      `| ${ratio.label} | ${fixed(ratio.value, 2)}x | ${ratio.target === undefined ? "-" : `${ratio.op} ${ratio.target}x`} | ${ratio.target === undefined ? "" : ratio.pass === undefined ? "?" : ratio.pass ? "pass" : "FAIL"} | ${ratio.metric === "cpu" ? "calls/s" : "CPU"} ${fixed(ratio.other, 2)}x |`,
  ),
  ...(searchIndex
    ? [
        "",
        "## Search index build",
        "",
        "| what | median | target | | builds | CPU, median |",
        "| --- | ---: | ---: | :---: | ---: | ---: |",
        `| \`new ToolSearchIndex\` over the search rows' ${fixed(searchIndex.tools)} definitions, in the bench's process (median of ${SEARCH_BUILDS} after 1 warm-up) | ${fixed(searchIndex.medianMs)} ms | < ${searchIndex.targetMs} ms | ${searchIndex.pass ? "pass" : "FAIL"} | ${searchIndex.builds.map((ms) => fixed(ms)).join(", ")} ms | ${fixed(searchIndex.cpuMedianMs)} ms |`,
      ]
    : []),
  "",
  "## Rows",
  "",
  "| scenario | stack | calls/s | p50 ms | p99 ms | CPU us/req | peak RSS MB | errors |",
  "| --- | --- | ---: | ---: | ---: | ---: | ---: | ---: |",
];
for (const scenario of selected) {
  for (const stack of STACKS) {
    const result = results.find((candidate) => candidate.stack === stack.id && candidate.scenario === scenario.id);
    if (result) {
      lines.push(
        `| ${scenario.label} | ${stack.label} | ${fixed(result.rps)} | ${fixed(result.p50)} | ${fixed(result.p99)} | ${fixed(result.cpuUs, 1)} | ${fixed(result.rssMb)} | ${result.errors} |`,
      );
    } else if (
      !scenario.stacks.includes(rowsId(stack)) &&
      !scenario.stacks.includes(stack.id) &&
      !QUICK &&
      !stack.diagnostic &&
      !stack.partial &&
      !scenario.own
    ) {
      lines.push(`| ${scenario.label} | ${stack.label} | ${notApplicable(scenario)} | | | | | |`);
    } else if (scenario.needsEtag && !QUICK) {
      lines.push(`| ${scenario.label} | ${stack.label} | n/a: no ETag sent yet | | | | | |`);
    }
  }
}
const split = results.filter((result) => result.partsUs);
if (split.length > 0) {
  lines.push("", "## CPU per call by process (stacks of several)", "", "| scenario | stack | process | CPU us/req |");
  lines.push("| --- | --- | --- | ---: |");
  for (const result of split) {
    for (const [name, us] of Object.entries(result.partsUs)) {
      const process = name === "self" ? "the MCP bridge" : "the OXP server behind it";
      lines.push(`| ${result.scenarioLabel} | ${result.stackLabel} | ${process} | ${fixed(us, 1)} |`);
    }
  }
}
if (cold.length > 0 || buildTimes.length > 0) {
  lines.push("", "## Start-up and build", "", "| what | runs | to first healthy /health | to first successful call |");
  lines.push("| --- | ---: | ---: | ---: |");
  for (const entry of cold) {
    lines.push(
      entry.note
        ? `| ${entry.label} | - | ${entry.note} | |`
        : `| ${entry.label} | ${entry.runs} | ${fixed(entry.healthMs)} ms | ${fixed(entry.callMs)} ms |`,
    );
  }
  for (const entry of buildTimes) {
    lines.push(`| ${entry.label} | 1 | wall time ${fixed(entry.ms)} ms | |`);
  }
}
lines.push(
  "",
  "Notes: the peers do the same work per call (parse, check the request and the tool input, run, JSON out) but " +
    "none authenticates, keeps idempotency records or logs. The MCP SDK builds a server and a transport per " +
    "request (its stateless pattern) and answers in JSON (`enableJsonResponse`); its invalid input and tool " +
    "error are 200s with `isError`. The MCP SDK v2 row is the same tools on `createMcpHandler` (a server per " +
    `request too, JSON answers), sent ${MODERN_REVISION} requests; the ratios against MCP use the v1 row. One ` +
    "load generator on one core caps the fastest stacks' calls/s: compare those on CPU/req.",
);
// One line each: a failed command's output would break the list.
const oneLine = (text) => text.replace(/\s*\n\s*/g, " / ").slice(0, 600);
if (problems.length > 0) {
  lines.push("", "## Problems", "", ...problems.map((problem) => `- ${oneLine(problem)}`));
}
const markdown = `${lines.join("\n")}\n`;
mkdirSync(path.dirname(OUT), { recursive: true });
writeFileSync(OUT, markdown);
writeFileSync(
  OUT.replace(/\.md$/, ".json"),
  `${JSON.stringify(
    {
      quick: QUICK,
      settings: { rounds: ROUNDS, seconds: SECONDS, warmup: WARMUP, connections: CONNECTIONS, pinning: pinning.why },
      nativeAdapter: "createHandler",
      // Each round's CPU and calls/s too: how far the medians' rounds spread.
      results: results.map(({ samples, ...result }) => ({
        ...result,
        cpuUsByRound: samples.map((sample) => Math.round(sample.cpuUs * 10) / 10),
        rpsByRound: samples.map((sample) => Math.round(sample.rps)),
      })),
      ratios,
      ...(searchIndex ? { searchIndex } : {}),
      cold,
      buildTimes,
      problems,
    },
    null,
    2,
    // Arrays of numbers (a round without answers has a null) on one line, as the repository's formatter writes them.
  ).replace(
    /\[\s+((?:-?[\d.]+|null)(?:,\s+(?:-?[\d.]+|null))*)\s+\]/g,
    (_, items) => `[${items.split(/,\s+/).join(", ")}]`,
  )}\n`,
);
process.stdout.write(markdown);
log(`bench: written to ${OUT}`);
process.exitCode = problems.length > 0 ? 1 : 0;
