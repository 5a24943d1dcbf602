/** Where our two stacks spend CPU under load: `node --cpu-prof` on each server, summarised as top self-time functions. */
// Usage: `node bench/profile.mjs [SECONDS=10] [--out bench/results/profile.md] [--top N] [--stacks ID,...]
// [--scenario ID]`. Runs the call scenario (Calculator.Add, 50 connections; `--scenario` names another of lib/scenarios.mjs) against the native and the Express adapter in turn, each profiled from start to exit (start-up is
// a few percent of the samples), and prints the top functions by self time and the share of each package.
import { mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { parseArgs } from "node:util";
import { measure, pinCores, startServer } from "./lib/harness.mjs";
import { requestFor, SCENARIOS, STACKS } from "./lib/scenarios.mjs";

const ROOT = fileURLToPath(new URL("..", import.meta.url));
const { values: opts, positionals } = parseArgs({
  allowPositionals: true,
  options: {
    out: { type: "string", default: `${ROOT}bench/results/profile.md` },
    top: { type: "string", default: "15" },
    stacks: { type: "string" },
    scenario: { type: "string", default: "call" },
  },
});
const SECONDS = Number(positionals[0] ?? 10);
const TOP = Number(opts.top);
const pinning = pinCores();
const call = SCENARIOS.find((scenario) => scenario.id === opts.scenario);
if (!call) {
  throw new Error(`no scenario ${opts.scenario}: one of ${SCENARIOS.map((scenario) => scenario.id).join(", ")}`);
}

/** Where a frame's code lives: a workspace package, an npm package, Node itself, or V8. */
function owner(url) {
  if (!url) {
    return "(V8 / native)";
  }
  if (url.startsWith("node:")) {
    return "node internals";
  }
  const npm = /node_modules\/((?:@[^/]+\/)?[^/]+)/.exec(url);
  if (npm && !/node_modules\/@otc\//.test(url)) {
    return npm[1];
  }
  const workspace = /\/(packages|apps)\/([^/]+)\//.exec(url);
  if (workspace) {
    return `@otc/${workspace[2]}`;
  }
  if (/\/bench\//.test(url)) {
    return "bench harness";
  }
  return url;
}

function summarise(profile) {
  const total = profile.samples.length;
  const msPerSample = (profile.endTime - profile.startTime) / 1000 / total;
  const byFunction = new Map();
  const byOwner = new Map();
  let idle = 0;
  for (const node of profile.nodes) {
    const { functionName, url, lineNumber } = node.callFrame;
    if (functionName === "(idle)") {
      idle += node.hitCount;
      continue;
    }
    const key = `${functionName || "(anonymous)"} ${url ? `${url.replace(/^file:\/\//, "").replace(ROOT, "")}:${lineNumber + 1}` : ""}`;
    byFunction.set(key, (byFunction.get(key) ?? 0) + node.hitCount);
    const who = ["(garbage collector)", "(program)"].includes(functionName) ? functionName : owner(url);
    byOwner.set(who, (byOwner.get(who) ?? 0) + node.hitCount);
  }
  const busy = total - idle;
  const share = (hits) => `${((100 * hits) / busy).toFixed(1)}%`;
  const sorted = (map) => [...map].sort((a, b) => b[1] - a[1]);
  return {
    busyMs: busy * msPerSample,
    idleShare: idle / total,
    functions: sorted(byFunction)
      .slice(0, TOP)
      .map(([name, hits]) => ({ name, share: share(hits) })),
    owners: sorted(byOwner)
      .slice(0, 12)
      .map(([name, hits]) => ({ name, share: share(hits) })),
  };
}

const lines = [
  "# CPU profiles under load",
  "",
  `- ${new Date().toISOString()}, Node ${process.version}; ${call.label}, 50 connections, ${SECONDS} s after a 2 s warm-up`,
  `- ${pinning.why}`,
  "- Self time: samples in the function itself, as a share of the server's busy (non-idle) samples",
];
const ONLY = opts.stacks ? new Set(opts.stacks.split(",")) : undefined;
const profiled = STACKS.filter((candidate) => (ONLY ? ONLY.has(candidate.id) : candidate.ours || candidate.diagnostic));
for (const stack of profiled) {
  const dir = mkdtempSync(path.join(tmpdir(), "otc-prof-"));
  const server = await startServer(
    pinning,
    { stack: stack.module, catalog: "demo" },
    { nodeArgs: ["--cpu-prof", `--cpu-prof-dir=${dir}`] },
  );
  const spec = requestFor(stack, call, {});
  const load = { connections: 50, expectStatus: spec.status };
  await measure(server, spec.request, { ...load, seconds: 2 });
  const result = await measure(server, spec.request, { ...load, seconds: SECONDS });
  await server.stop();
  const file = readdirSync(dir).find((name) => name.endsWith(".cpuprofile"));
  if (!file) {
    throw new Error(`${stack.label}: no profile written`);
  }
  const summary = summarise(JSON.parse(readFileSync(path.join(dir, file), "utf8")));
  rmSync(dir, { recursive: true, force: true });
  lines.push(
    "",
    `## ${stack.label} (${server.note})`,
    "",
    `${Math.round(result.rps).toLocaleString("en-US")} calls/s, ${result.cpuUs.toFixed(1)} us CPU per call under the profiler (it adds its own cost); idle ${(100 * summary.idleShare).toFixed(0)}% of samples.`,
    "",
    "| top self time | share |",
    "| --- | ---: |",
    ...summary.functions.map((entry) => `| \`${entry.name.trim()}\` | ${entry.share} |`),
    "",
    "| by package | share |",
    "| --- | ---: |",
    ...summary.owners.map((entry) => `| ${entry.name} | ${entry.share} |`),
  );
}
const markdown = `${lines.join("\n")}\n`;
writeFileSync(opts.out, markdown);
process.stdout.write(markdown);
