/**
 * Bench: latency and server CPU per call of Calculator.Add, called directly over OXP and through the
 * bridge (MCP over stdio and over stateless streamable HTTP), by a client of each MCP SDK generation: v1
 * (@modelcontextprotocol/sdk) speaking 2025, v2 (@modelcontextprotocol/client) speaking 2026-07-28. The demo
 * and the bridge run as child processes whose CPU time is read from /proc (Linux). Run: `npm run bench -w
 * @otc/mcp` (`CALLS=50` for a quick run).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { Client as V2Client, StreamableHTTPClientTransport as V2HttpTransport } from "@modelcontextprotocol/client";
import { StdioClientTransport as V2StdioTransport } from "@modelcontextprotocol/client/stdio";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { StreamableHTTPClientTransport } from "@modelcontextprotocol/sdk/client/streamableHttp.js";
import { createClient } from "@otc/client";

const CALLS = Number(process.env.CALLS ?? 500);
const WARMUP = Math.min(50, CALLS);
const API_KEY = "bench-key-0123456789abcdef";
const here = (relative: string) => fileURLToPath(new URL(relative, import.meta.url));
const CLOCK_TICKS_PER_S = 100; // Linux's USER_HZ

/** CPU time (user + system) a process has used so far, in ms. */
function cpuMs(pid: number): number {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  // utime and stime are fields 14 and 15 of stat; after the command name, 12 and 13 (0-based 11, 12).
  return ((Number(fields[11]) + Number(fields[12])) * 1000) / CLOCK_TICKS_PER_S;
}

/** Spawns a tsx script and resolves with the process and the first line matching `pattern` on its output. */
function start(
  script: string,
  args: string[],
  { env, pattern, cwd }: { env: Record<string, string>; pattern: RegExp; cwd: string },
) {
  const child = spawn(process.execPath, ["--import", "tsx", script, ...args], {
    cwd,
    env: { ...process.env, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  return new Promise<{ child: ChildProcess; match: RegExpExecArray }>((resolve, reject) => {
    let seen = "";
    const onData = (chunk: Buffer) => {
      seen += String(chunk);
      const match = pattern.exec(seen);
      if (match) {
        resolve({ child, match });
      }
    };
    child.stdout?.on("data", onData);
    child.stderr?.on("data", onData);
    child.once("exit", (code) => reject(new Error(`${script} exited with ${code}: ${seen}`)));
  });
}

interface Row {
  path: string;
  latencies: number[];
  demoCpu: number;
  bridgeCpu: number | undefined;
}

async function measure(
  path: string,
  call: () => Promise<unknown>,
  demoPid: number,
  bridgePid: number | undefined,
): Promise<Row> {
  for (let i = 0; i < WARMUP; i++) {
    await call();
  }
  const demoBefore = cpuMs(demoPid);
  const bridgeBefore = bridgePid === undefined ? 0 : cpuMs(bridgePid);
  const latencies: number[] = [];
  for (let i = 0; i < CALLS; i++) {
    const started = performance.now();
    await call();
    latencies.push(performance.now() - started);
  }
  return {
    path,
    latencies,
    demoCpu: (cpuMs(demoPid) - demoBefore) / CALLS,
    bridgeCpu: bridgePid === undefined ? undefined : (cpuMs(bridgePid) - bridgeBefore) / CALLS,
  };
}

const quantile = (values: number[], q: number) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0;
};
const mean = (values: number[]) => values.reduce((sum, value) => sum + value, 0) / values.length;
const fixed = (value: number) => value.toFixed(2);

const demo = await start(here("../../../apps/demo/src/main.ts"), [], {
  env: { PORT: "0", LOG_LEVEL: "warn", OXP_API_KEY: API_KEY },
  pattern: /listening on (http:\/\/\S+)/,
  cwd: here("../../../apps/demo"),
});
const demoUrl = demo.match[1] as string;
const demoPid = demo.child.pid as number;
const children: ChildProcess[] = [demo.child];
try {
  const rows: Row[] = [];
  const direct = createClient({ baseUrl: demoUrl, apiKey: API_KEY });
  rows.push(
    await measure(
      "OXP, direct (@otc/client)",
      () => direct.callTool({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } }),
      demoPid,
      undefined,
    ),
  );

  const add = { name: "Calculator_Add", arguments: { a: 1, b: 2 } };
  const stdioServer = {
    command: process.execPath,
    args: ["--import", "tsx", here("./bridge-server.ts"), "stdio"],
    env: { OXP_URL: demoUrl, OXP_API_KEY: API_KEY },
    cwd: here(".."),
    stderr: "ignore" as const,
  };
  const stdio = new StdioClientTransport(stdioServer);
  const stdioClient = new Client({ name: "bench", version: "1.0.0" });
  await stdioClient.connect(stdio);
  await stdioClient.listTools();
  rows.push(
    await measure(
      "MCP over stdio, through the bridge (v1 client, 2025)",
      () => stdioClient.callTool(add),
      demoPid,
      stdio.pid ?? undefined,
    ),
  );
  await stdioClient.close();

  // The v2 client negotiates: its probe runs on a process of its own, then the session's speaks 2026-07-28.
  const modern = { versionNegotiation: { mode: "auto" as const } };
  const stdioV2 = new V2StdioTransport(stdioServer);
  const stdioClientV2 = new V2Client({ name: "bench", version: "1.0.0" }, modern);
  await stdioClientV2.connect(stdioV2);
  await stdioClientV2.listTools();
  rows.push(
    await measure(
      `MCP over stdio, through the bridge (v2 client, ${stdioClientV2.getNegotiatedProtocolVersion()})`,
      () => stdioClientV2.callTool(add),
      demoPid,
      stdioV2.pid ?? undefined,
    ),
  );
  await stdioClientV2.close();

  const http = await start(here("./bridge-server.ts"), ["http"], {
    env: { OXP_URL: demoUrl, OXP_API_KEY: API_KEY },
    pattern: /(http:\/\/\S+\/mcp)/,
    cwd: here(".."),
  });
  children.push(http.child);
  const httpUrl = new URL(http.match[1] as string);
  const httpClient = new Client({ name: "bench", version: "1.0.0" });
  await httpClient.connect(new StreamableHTTPClientTransport(httpUrl));
  await httpClient.listTools();
  rows.push(
    await measure(
      "MCP over streamable HTTP (stateless), through the bridge (v1 client, 2025)",
      () => httpClient.callTool(add),
      demoPid,
      http.child.pid,
    ),
  );
  await httpClient.close();

  const httpClientV2 = new V2Client({ name: "bench", version: "1.0.0" }, modern);
  await httpClientV2.connect(new V2HttpTransport(httpUrl));
  await httpClientV2.listTools();
  rows.push(
    await measure(
      `MCP over streamable HTTP (stateless), through the bridge (v2 client, ${httpClientV2.getNegotiatedProtocolVersion()})`,
      () => httpClientV2.callTool(add),
      demoPid,
      http.child.pid,
    ),
  );
  await httpClientV2.close();

  const base = rows[0] as Row;
  // The median, not the mean: one stall on a busy machine moves a mean of sequential calls a lot.
  const baseMedian = quantile(base.latencies, 0.5);
  const baseCpu = base.demoCpu;
  console.log(`Calculator.Add, ${CALLS} sequential calls each after ${WARMUP} to warm up; CPU in ms per call.\n`);
  console.log("| path | mean ms | p50 ms | p95 ms | p50 vs direct | demo CPU | bridge CPU | server CPU vs direct |");
  console.log("|---|---:|---:|---:|---:|---:|---:|---:|");
  for (const row of rows) {
    const serverCpu = row.demoCpu + (row.bridgeCpu ?? 0);
    console.log(
      `| ${row.path} | ${fixed(mean(row.latencies))} | ${fixed(quantile(row.latencies, 0.5))} | ${fixed(quantile(row.latencies, 0.95))} | ${fixed(quantile(row.latencies, 0.5) / baseMedian)}x | ${fixed(row.demoCpu)} | ${row.bridgeCpu === undefined ? "-" : fixed(row.bridgeCpu)} | ${fixed(serverCpu / baseCpu)}x |`,
    );
  }
} finally {
  for (const child of children) {
    child.kill();
  }
}
