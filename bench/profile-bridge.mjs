/** Where a tools/call through the MCP bridge spends CPU: `--cpu-prof` on the bridge and on the OXP server behind it. */
// Usage: `node bench/profile-bridge.mjs [SECONDS=8] [--top N] [--out FILE.md] [--peer]`. Drives Calculator.Add as a
// 2026-07-28 (MCP SDK v2) client sends it over stateless HTTP, 50 connections, at the bridge stack
// (bench/stacks/mcp-bridge.mjs), and with `--peer` at the bare MCP SDK v2 server too; prints each process's top
// self-time functions, the share of each package, and the inclusive time of the bridge's steps. `--keep DIR` keeps
// the .cpuprofile files (open them in Chrome's DevTools) in DIR.
import { cpSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { measure, pinCores, startServer } from "./lib/harness.mjs";
import { summarise, summaryTables } from "./lib/profile-summary.mjs";
import { inRevision, requestFor } from "./lib/scenarios.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: "string" },
    top: { type: "string", default: "25" },
    peer: { type: "boolean", default: false },
    keep: { type: "string" },
  },
});
const SECONDS = Number(positionals[0] ?? 8);
const TOP = Number(opts.top);
const pinning = pinCores();
const spec = inRevision(requestFor({ mcp: true }, { id: "call" }, {}), "2026-07-28");

/** Functions whose inclusive time (their own and what they call, counted once per stack) says where a call goes. */
const STEPS = [
  "createServer",
  "callTool",
  "runCall",
  "callToolAsync",
  "postCall",
  "toCallToolResult",
  "handleRequest",
  "fetch",
  "connect",
  "parse",
  "stringify",
  "setRequestHandler",
  "registerCapabilities",
];

/** Inclusive samples of every function named in STEPS: a frame under another of the same name counts once. */
function inclusive(profile) {
  const byId = new Map(profile.nodes.map((node) => [node.id, node]));
  const total = profile.samples.length;
  const idle = profile.nodes
    .filter((node) => node.callFrame.functionName === "(idle)")
    .reduce((s, n) => s + n.hitCount, 0);
  const out = new Map();
  const walk = (node, open) => {
    const name = node.callFrame.functionName;
    const counted = STEPS.includes(name) && !open.has(name);
    const next = counted ? new Set([...open, name]) : open;
    let hits = node.hitCount;
    for (const child of node.children ?? []) {
      hits += walk(byId.get(child), next);
    }
    if (counted) {
      out.set(name, (out.get(name) ?? 0) + hits);
    }
    return hits;
  };
  walk(profile.nodes[0], new Set());
  return [...out]
    .sort((a, b) => b[1] - a[1])
    .map(([name, hits]) => ({ name, share: `${((100 * hits) / (total - idle)).toFixed(1)}%` }));
}

const lines = [
  "# CPU profiles of a tools/call through the MCP bridge",
  "",
  `- ${new Date().toISOString()}, Node ${process.version}; Calculator_Add, 2026-07-28 stateless HTTP, 50 connections, ${SECONDS} s after a 2 s warm-up`,
  `- ${pinning.why}`,
  "- Self time: samples in the function itself, as a share of the process's busy (non-idle) samples",
];
const section = (title, summary, steps) => [
  "",
  `### ${title}`,
  "",
  `busy ${summary.busyMs.toFixed(0)} ms; idle ${(100 * summary.idleShare).toFixed(0)}% of samples`,
  "",
  ...summaryTables(summary),
  ...(steps
    ? [
        "",
        "| inclusive (a step and what it calls) | share |",
        "| --- | ---: |",
        ...steps.map((e) => `| ${e.name} | ${e.share} |`),
      ]
    : []),
];

const stacks = [
  { label: "bridge (serveHttp) + OXP server (native adapter)", config: { stack: "mcp-bridge", catalog: "demo" } },
  ...(opts.peer ? [{ label: "bare MCP SDK v2 server", config: { stack: "mcp", sdk: "v2", catalog: "demo" } }] : []),
];
for (const stack of stacks) {
  const dir = mkdtempSync(path.join(tmpdir(), "otc-prof-"));
  const oxpDir = path.join(dir, "oxp");
  const nodeArgs = ["--cpu-prof", `--cpu-prof-dir=${dir}`];
  const config = { ...stack.config, oxpNodeArgs: ["--cpu-prof", `--cpu-prof-dir=${oxpDir}`] };
  if (config.stack === "mcp") {
    // The peer reads the wire tool list the bench writes; here, the demo's, built as run.mjs builds it.
    const { wireToolList } = await import("./stacks/catalog.mjs");
    config.listFile = path.join(dir, "demo.json");
    writeFileSync(config.listFile, JSON.stringify(wireToolList("demo")));
  }
  const server = await startServer(pinning, config, { nodeArgs });
  const load = { connections: 50, expectStatus: 200 };
  await measure(server, spec.request, { ...load, seconds: 2 });
  const result = await measure(server, spec.request, { ...load, seconds: SECONDS });
  await server.stop();
  const parts = result.partsUs
    ? ` (${Object.entries(result.partsUs)
        .map(([name, us]) => `${name === "self" ? "bridge" : name} ${us.toFixed(0)} us`)
        .join(" + ")})`
    : "";
  lines.push(
    "",
    `## ${stack.label}`,
    "",
    `${Math.round(result.rps).toLocaleString("en-US")} calls/s, ${result.cpuUs.toFixed(0)} us CPU per call${parts} under the profiler (it adds its own cost), ${result.errors} errors.`,
  );
  const profileIn = (folder) => {
    const file = readdirSync(folder).find((name) => name.endsWith(".cpuprofile"));
    return file ? JSON.parse(readFileSync(path.join(folder, file), "utf8")) : undefined;
  };
  const own = profileIn(dir);
  if (own) {
    lines.push(
      ...section(
        config.stack === "mcp" ? "the MCP server" : "the bridge's process",
        summarise(own, { root: ROOT, top: TOP }),
        inclusive(own),
      ),
    );
  }
  if (config.stack === "mcp-bridge") {
    const oxp = profileIn(oxpDir);
    if (oxp) {
      lines.push(...section("the OXP server's process", summarise(oxp, { root: ROOT, top: TOP })));
    }
  }
  if (opts.keep) {
    cpSync(dir, path.join(opts.keep, config.stack), { recursive: true });
  }
  rmSync(dir, { recursive: true, force: true });
}
const markdown = `${lines.join("\n")}\n`;
if (opts.out) {
  writeFileSync(opts.out, markdown);
}
process.stdout.write(markdown);
