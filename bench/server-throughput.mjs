// Throughput of the OXP server, side by side in one run: the Express adapter as deployed, the same
// with response validation (as the tests run it), and the node:http adapter (createHandler). Each
// server runs in its own process; autocannon loads it over loopback, bounded in time.
// Run with `npm run bench` (it builds first); `node bench/server-throughput.mjs SECONDS` sets the seconds per row.
import { spawn } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";
import autocannon from "autocannon";

const DURATION_S = Number(process.argv[2] ?? 4);
const CONNECTIONS = 16;
const serve = fileURLToPath(new URL("./serve.mjs", import.meta.url));

const json = (body) => ({
  method: "POST",
  path: "/tools/call",
  headers: { "content-type": "application/json" },
  body: JSON.stringify(body),
});
const workloads = {
  "GET /tools": { method: "GET", path: "/tools" },
  "call Calculator.Add": json({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } }),
  "call, replayed call_id": json({ tool_id: "Calculator.Add", call_id: "bench-replay", input: { a: 1, b: 2 } }),
  "call, invalid input (422)": json({ tool_id: "Calculator.Add", input: { a: "x" } }),
};

async function start(mode) {
  const child = spawn(process.execPath, [serve, mode], { stdio: ["ignore", "pipe", "inherit"] });
  const [line] = await once(child.stdout, "data");
  return { child, url: String(line).trim() };
}

async function load(url, request) {
  const result = await autocannon({ url, connections: CONNECTIONS, duration: DURATION_S, requests: [request] });
  const bad = result.non2xx - (request.body?.includes('"x"') ? result.requests.total : 0);
  return {
    rps: result.requests.average,
    p50: result.latency.p50,
    p99: result.latency.p99,
    errors: result.errors + Math.max(0, bad),
  };
}

const modes = ["express", "express-validated", "node"];
const results = {};
for (const mode of modes) {
  const { child, url } = await start(mode);
  results[mode] = {};
  for (const [name, request] of Object.entries(workloads)) {
    results[mode][name] = await load(url, request);
  }
  child.kill("SIGTERM");
  await once(child, "exit");
}

console.log(`OXP server throughput: ${CONNECTIONS} connections, ${DURATION_S} s per row, loopback, ${process.version}`);
console.log(`${"workload".padEnd(28)}${modes.map((mode) => mode.padStart(20)).join("")}   ratios to express`);
for (const name of Object.keys(workloads)) {
  const cells = modes.map((mode) => {
    const r = results[mode][name];
    return `${Math.round(r.rps)} r/s p99 ${r.p99}ms${r.errors ? " !" : ""}`.padStart(20);
  });
  const base = results.express[name].rps;
  const ratios = modes
    .slice(1)
    .map((mode) => `${mode} ${(results[mode][name].rps / base).toFixed(2)}x`)
    .join(", ");
  console.log(`${name.padEnd(28)}${cells.join("")}   ${ratios}`);
}
