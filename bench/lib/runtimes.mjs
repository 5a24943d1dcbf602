/** The fetch handler on other runtimes (Bun, Deno, workerd) and our two Node entries, as processes the bench starts and measures from outside. */
import { spawn } from "node:child_process";
import { once } from "node:events";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import os from "node:os";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { track } from "./harness.mjs";

const ROOT = fileURLToPath(new URL("../..", import.meta.url));
const ENTRIES = fileURLToPath(new URL("../runtimes/", import.meta.url));
const BIN = path.join(ROOT, "node_modules", ".bin");

/** The compatibility date workerd runs the bundle with (as tests/helpers/src/runtimes.ts). */
const WORKERD_COMPATIBILITY_DATE = "2026-11-01";

/** A runtime's version: its npm package's, as installed at the root (`?` when it is not). */
export function runtimeVersion(runtime) {
  try {
    return JSON.parse(readFileSync(path.join(ROOT, "node_modules", runtime, "package.json"), "utf8")).version;
  } catch {
    return "?";
  }
}

/**
 * How to start each entry: a command that serves the demo catalog on 127.0.0.1 and prints `listening on <url>` on
 * standard error (standard output is the log's; workerd reports its port on descriptor 3 instead). `dir` is a temporary directory of the launch's own.
 */
export async function launchOf(runtime, dir) {
  const entry = (name) => path.join(ENTRIES, name);
  switch (runtime) {
    case "node-adapter":
      return { command: process.execPath, args: [entry("node-adapter.mjs")], env: {} };
    case "node-bridge":
      return { command: process.execPath, args: [entry("node-bridge.mjs")], env: {} };
    case "bun":
      // --no-install: Bun never installs a missing import. Its transpiler cache off: every start is a cold one.
      return {
        command: path.join(BIN, "bun"),
        args: ["--no-install", entry("bun.mjs")],
        env: { BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" },
      };
    case "deno":
      return {
        command: path.join(BIN, "deno"),
        args: [
          "run",
          // Bare imports from the node_modules npm installed; nothing downloaded, no config or lock file touched.
          "--node-modules-dir=manual",
          "--no-config",
          "--no-lock",
          "--no-remote",
          "--cached-only",
          "--no-prompt",
          "--allow-net=127.0.0.1",
          "--allow-env",
          entry("deno.mjs"),
        ],
        // A cache of its own, removed with `dir`: every start is a cold one.
        env: { DENO_DIR: path.join(dir, "deno-dir"), DENO_NO_UPDATE_CHECK: "1" },
      };
    case "workerd": {
      await bundleWorker(path.join(dir, "worker.mjs"));
      writeFileSync(path.join(dir, "config.capnp"), workerdConfig());
      return {
        command: path.join(BIN, "workerd"),
        args: ["serve", "--control-fd=3", path.join(dir, "config.capnp")],
        env: {},
        controlFd: true,
      };
    }
  }
  throw new Error(`unknown runtime ${runtime}`);
}

/** Bundles bench/runtimes/workerd.mjs into one module, as a Workers deployment would (no Node built-ins). */
async function bundleWorker(outfile) {
  const { build } = await import("esbuild");
  await build({
    entryPoints: [path.join(ENTRIES, "workerd.mjs")],
    outfile,
    bundle: true,
    format: "esm",
    platform: "neutral",
    mainFields: ["module", "main"],
    conditions: ["workerd", "worker", "browser"],
    logLevel: "silent",
  });
}

/** A workerd config serving worker.mjs beside it on 127.0.0.1, a port of its own (reported on descriptor 3). */
function workerdConfig() {
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .app) ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);
const app :Workerd.Worker = (
  modules = [ (name = "worker", esModule = embed "worker.mjs") ],
  compatibilityDate = "${WORKERD_COMPATIBILITY_DATE}",
);
`;
}

/** A temporary directory for one launch, and its removal. */
export function launchDir(runtime) {
  const dir = mkdtempSync(path.join(os.tmpdir(), `otc-bench-${runtime}-`));
  return { dir, remove: () => rmSync(dir, { recursive: true, force: true }) };
}

/**
 * Resolves with the URL a launched process reports: a `listening on <url>` line on either stream (piped, or not),
 * or workerd's control message on descriptor 3.
 */
export function urlOf(child, { controlFd = false, timeoutMs, what }) {
  return new Promise((resolve, reject) => {
    let out = "";
    let control = "";
    const timer = setTimeout(
      () => reject(new Error(`${what}: no URL in ${timeoutMs} ms: ${out.slice(-500)}`)),
      timeoutMs,
    );
    const done = (url) => {
      clearTimeout(timer);
      resolve(url);
    };
    const read = (chunk) => {
      out = (out + chunk).slice(-4_000);
      const match = /listening on (http:\/\/\S+)/.exec(out);
      if (match && !controlFd) {
        done(match[1]);
      }
    };
    child.stdout?.on("data", read);
    child.stderr?.on("data", read);
    if (controlFd) {
      child.stdio[3].on("data", (chunk) => {
        control += chunk;
        const match = /\{"event":"listen","socket":"http","port":(\d+)\}/.exec(control);
        if (match) {
          done(`http://127.0.0.1:${match[1]}`);
        }
      });
    }
    child.once("exit", (code, signal) => {
      clearTimeout(timer);
      reject(new Error(`${what} exited (${code ?? signal}) before listening: ${out.slice(-500)}`));
    });
  });
}

/** Clock ticks per second of /proc's CPU times (USER_HZ: 100 on Linux). */
const TICKS = 100;

/**
 * A process's CPU time (user + system, every thread) in µs and its peak RSS in KB, read from /proc: for a server
 * that is not Node, and so cannot report `process.cpuUsage()` over IPC. Ticks of 10 ms: over a window of seconds
 * at full load, a fraction of a percent.
 */
export function procUsage(pid) {
  const stat = readFileSync(`/proc/${pid}/stat`, "utf8");
  // Fields after the command name (which may hold spaces and parentheses): state is field 3, utime 14, stime 15.
  const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
  const user = (Number(fields[11]) * 1e6) / TICKS;
  const system = (Number(fields[12]) * 1e6) / TICKS;
  const status = readFileSync(`/proc/${pid}/status`, "utf8");
  const maxRssKb = Number(/^VmHWM:\s+(\d+)/m.exec(status)?.[1] ?? Number.NaN);
  return { cpu: { user, system }, maxRssKb };
}

/**
 * Starts the fetch handler on `runtime` (bun or deno) as a server the harness measures like the Node ones
 * (`url`, `usage()`, `stop()`), its CPU read from /proc. Pinned to the servers' core once it listens.
 */
export async function startRuntimeServer(pinning, runtime, { timeoutMs = 60_000 } = {}) {
  const { dir, remove } = launchDir(runtime);
  try {
    const launch = await launchOf(runtime, dir);
    const [command, ...args] = [...(pinning.startPrefix ?? []), launch.command, ...launch.args];
    const child = track(
      spawn(command, args, {
        cwd: dir,
        env: { ...process.env, NO_COLOR: "1", ...launch.env },
        // Standard output (a line per call) goes to /dev/null, as the Node servers'.
        stdio: ["ignore", "ignore", "pipe", launch.controlFd ? "pipe" : "ignore"],
      }),
    );
    const url = await urlOf(child, { controlFd: launch.controlFd, timeoutMs, what: runtime });
    if (pinning.pinned && !pinning.pin(child.pid)) {
      throw new Error(`taskset could not move ${runtime} to core 1`);
    }
    return {
      url,
      note: runtimeVersion(runtime),
      child,
      usage: async () => procUsage(child.pid),
      async stop() {
        if (child.exitCode === null && child.signalCode === null) {
          const exited = once(child, "exit");
          child.kill("SIGTERM");
          const timer = setTimeout(() => child.kill("SIGKILL"), 5_000);
          await exited;
          clearTimeout(timer);
        }
        remove();
      },
    };
  } catch (error) {
    remove();
    throw error;
  }
}
