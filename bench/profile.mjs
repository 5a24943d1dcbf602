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
import { summarise as summariseProfile, summaryTables } from "./lib/profile-summary.mjs";
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
  const summary = summariseProfile(JSON.parse(readFileSync(path.join(dir, file), "utf8")), { root: ROOT, top: TOP });
  rmSync(dir, { recursive: true, force: true });
  lines.push(
    "",
    `## ${stack.label} (${server.note})`,
    "",
    `${Math.round(result.rps).toLocaleString("en-US")} calls/s, ${result.cpuUs.toFixed(1)} us CPU per call under the profiler (it adds its own cost); idle ${(100 * summary.idleShare).toFixed(0)}% of samples.`,
    "",
    ...summaryTables(summary),
  );
}
const markdown = `${lines.join("\n")}\n`;
writeFileSync(opts.out, markdown);
process.stdout.write(markdown);
