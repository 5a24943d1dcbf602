// Serves a fetch-handler module on Bun, Deno, workerd or Node as a real process on loopback, for tests that run one handler on every runtime.
import { type ChildProcess, spawn } from "node:child_process";
import { accessSync, constants, rmSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import type { Readable } from "node:stream";
import { fileURLToPath, pathToFileURL } from "node:url";
import { build } from "esbuild";
import { WORKERD_BUILD } from "./bundle.js";

/** A runtime {@link startRuntime} can serve a handler on. */
export type Runtime = "bun" | "deno" | "workerd" | "node";

/** Every runtime, in the order tests list them. */
export const RUNTIMES: readonly Runtime[] = ["bun", "deno", "workerd", "node"];

/** What {@link startRuntime} serves, and how long it may take. */
export interface StartRuntimeOptions {
  runtime: Runtime;
  /** Absolute path of an ES module whose default export is `{ fetch(request, env) }`. */
  entry: string;
  /**
   * The handler's `fetch` gets this as its second argument on every runtime (on workerd as text bindings), and
   * nowhere else: not in the process environment, which workerd does not have, so a handler passes only when it
   * reads that argument. Without it, `fetch` gets what its runtime passes there itself, as `bun run`, `deno serve`
   * and workerd call a default export: Bun's `Server`, Deno's `ServeHandlerInfo`, workerd's (empty) env, and on
   * Node @hono/node-server's `{ incoming, outgoing }`.
   */
  env?: Record<string, string>;
  /** The path polled until the server answers it (any status counts): `/` unless given. */
  readyPath?: string;
  /** How long the whole start may take, workerd's bundling included: 20 s unless given. */
  timeoutMs?: number;
}

/** A server {@link startRuntime} started. */
export interface RunningRuntime {
  /** `http://127.0.0.1:<port>`, without a trailing slash. */
  url: string;
  /** Kills the process (its whole group), waits for it to exit, and removes its temporary files. */
  stop(): Promise<void>;
  /** What the process wrote to stdout and stderr so far (the last 64 KiB). */
  output(): string;
  /** Milliseconds from spawning the process to the first answered request (workerd's bundling not included). */
  startedMs: number;
}

/** The compatibility date workerd runs bundles with: recent, and no later than the pinned workerd's release. */
export const WORKERD_COMPATIBILITY_DATE = "2026-11-01";

const REPO_ROOT = fileURLToPath(new URL("../../../", import.meta.url));
/** The line a launcher prints once it listens, followed by its port. */
const LISTENING = "otc-runtime-listening ";
const OUTPUT_LIMIT = 64 * 1024;

/**
 * Starts `entry`'s fetch handler on `runtime`, on 127.0.0.1 and a port of its own, and resolves once a request to
 * `readyPath` has been answered. Rejects with the process's output when it exits or the time runs out first.
 *
 * @example
 * const server = await startRuntime({ runtime: "deno", entry: fileURLToPath(new URL("./entry.mjs", import.meta.url)) });
 * try {
 *   expect((await fetch(`${server.url}/health`)).status).toBe(200);
 * } finally {
 *   await server.stop();
 * }
 */
export async function startRuntime(options: StartRuntimeOptions): Promise<RunningRuntime> {
  const deadline = Date.now() + (options.timeoutMs ?? 20_000);
  const dir = await mkdtemp(join(tmpdir(), `otc-${options.runtime}-`));
  try {
    const launch =
      options.runtime === "workerd"
        ? await workerd(options.entry, dir, options.env ?? {})
        : await launcher(options.runtime, dir, pathToFileURL(options.entry).href, options.env);
    return await serve(launch, options, dir, deadline);
  } catch (error) {
    await rm(dir, { recursive: true, force: true });
    throw error;
  }
}

/**
 * How to spawn one runtime: its binary, arguments and extra environment. `controlFd`: the port arrives as workerd's
 * control messages on descriptor 3, not as a line on stdout.
 */
interface Launch {
  binary: string;
  args: string[];
  env: Record<string, string>;
  controlFd?: true;
}

/** Processes still running, killed when this process exits normally; their watchdogs cover a killed process. */
const running = new Map<ChildProcess, string>();
process.once("exit", () => {
  for (const [child, dir] of running) {
    killGroup(child, "SIGKILL");
    rmSync(dir, { recursive: true, force: true });
  }
});

/**
 * A `sh` that kills the process group `pgid` and removes `dir` once its stdin closes, which happens when this process
 * dies however it dies (SIGKILL, a worker killed on a timeout): no "exit" handler runs then, and workerd has no stdin
 * to watch. (dash's `kill` takes no `--`.)
 */
function watchdog(pgid: number, dir: string): ChildProcess {
  const guard = spawn(
    "sh",
    ["-c", 'cat > /dev/null; kill -KILL "-$1" 2> /dev/null; rm -rf "$2"', "otc-runtime-watchdog", String(pgid), dir],
    { stdio: ["pipe", "ignore", "ignore"], detached: true },
  );
  // Without sh there is no watchdog, and the "exit" handler alone cleans up.
  guard.on("error", () => {});
  return guard;
}

/**
 * Spawns `launch` in its own process group, reads its port, and waits until it answers. On failure the process is
 * gone when this rejects; `dir` is the caller's to remove then.
 */
async function serve(
  launch: Launch,
  options: StartRuntimeOptions,
  dir: string,
  deadline: number,
): Promise<RunningRuntime> {
  const { runtime } = options;
  let output = "";
  const spawnedAt = performance.now();
  // Detached: the runtime leads its own process group, which stop() kills whole.
  const child = spawn(launch.binary, launch.args, {
    cwd: dir,
    env: { ...baseEnv(), ...launch.env },
    stdio: ["ignore", "pipe", "pipe", launch.controlFd ? "pipe" : "ignore"],
    detached: true,
  });
  running.set(child, dir);
  // Piped above; spawn's types know that only for a three-entry stdio.
  const [, stdout, stderr, control] = child.stdio as unknown as [null, Readable, Readable, Readable | null];
  const guard = child.pid === undefined ? undefined : watchdog(child.pid, dir);
  const polling = new AbortController();
  let exited!: Promise<void>;
  const failed = new Promise<never>((_, reject) => {
    exited = new Promise<void>((resolve) => {
      child.once("error", (error) => {
        resolve();
        reject(new Error(`${runtime} could not be spawned: ${error.message}`));
      });
      child.once("exit", (code, signal) => {
        resolve();
        reject(new Error(`${runtime} exited (${signal ?? code}) before answering:\n${output}`));
      });
    });
  });
  failed.catch(() => polling.abort());
  const keep = (chunk: Buffer) => {
    output = (output + chunk.toString()).slice(-OUTPUT_LIMIT);
  };
  stdout.on("data", keep);
  stderr.on("data", keep);
  const listening = control
    ? lineMatching(control, /^\{"event":"listen","socket":"http","port":(\d+)\}$/m)
    : lineMatching(stdout, new RegExp(`^${LISTENING}(\\d+)$`, "m"));

  const kill = async () => {
    if (!running.delete(child)) {
      return;
    }
    // The watchdog first: once the runtime is gone, its group id may name another group.
    guard?.kill("SIGKILL");
    killGroup(child, "SIGTERM");
    const timer = setTimeout(() => killGroup(child, "SIGKILL"), 2_000);
    await exited;
    clearTimeout(timer);
  };

  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${runtime} did not answer within ${options.timeoutMs ?? 20_000} ms:\n${output}`)),
      Math.max(0, deadline - Date.now()),
    );
  });
  late.catch(() => {});
  try {
    const port = await Promise.race([listening, failed, late]);
    const url = `http://127.0.0.1:${port}`;
    await Promise.race([answered(`${url}${options.readyPath ?? "/"}`, polling.signal), failed, late]);
    const startedMs = Math.round(performance.now() - spawnedAt);
    const stop = async () => {
      await kill();
      await rm(dir, { recursive: true, force: true });
    };
    return { url, stop, output: () => output, startedMs };
  } catch (error) {
    polling.abort();
    await kill();
    throw error;
  } finally {
    clearTimeout(timer);
  }
}

/** Resolves once a GET to `url` gets any answer, retrying every 10 ms; gives up quietly once `signal` aborts. */
async function answered(url: string, signal: AbortSignal): Promise<void> {
  while (!signal.aborted) {
    try {
      const response = await fetch(url, { signal });
      await response.body?.cancel();
      return;
    } catch {
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }
}

/** The number captured by `pattern` in what `stream` writes, once a line matches; `stream` is read to its end. */
function lineMatching(stream: Readable, pattern: RegExp): Promise<number> {
  return new Promise((resolve) => {
    let text = "";
    stream.on("data", (chunk: Buffer) => {
      text = (text + chunk.toString()).slice(-OUTPUT_LIMIT);
      const match = pattern.exec(text);
      if (match) {
        resolve(Number(match[1]));
      }
    });
  });
}

/** The variables a runtime needs from this process; the rest (vitest's, NODE_OPTIONS) stays out of its way. */
function baseEnv(): Record<string, string> {
  const env: Record<string, string> = { NO_COLOR: "1", DO_NOT_TRACK: "1" };
  for (const name of ["PATH", "HOME", "TMPDIR", "LANG"]) {
    const value = process.env[name];
    if (value !== undefined) {
      env[name] = value;
    }
  }
  return env;
}

/** Signals the process group `child` leads; nothing when it is gone already. */
function killGroup(child: ChildProcess, signal: NodeJS.Signals): void {
  if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) {
    return;
  }
  try {
    process.kill(-child.pid, signal);
  } catch {
    // Exited between the check and the signal.
  }
}

/** A runtime's binary from the repository's node_modules (root devDependencies), or an error saying how to get it. */
function binary(name: "bun" | "deno" | "workerd"): string {
  const path = join(REPO_ROOT, "node_modules", ".bin", name);
  try {
    accessSync(path, constants.X_OK);
  } catch {
    throw new Error(`${name} is missing (looked for ${path}): run npm install at the repository root`);
  }
  return path;
}

/**
 * Writes the launcher of `runtime` into `dir`: it imports the entry and serves it on port 0, printing the port.
 * The entry is imported statically, from a file in `dir`: Deno then needs no read permission to load it, and no
 * runtime finds a config file of the repository's. `fetch` gets `env`, or without it the runtime's own second
 * argument.
 */
async function launcher(
  runtime: Exclude<Runtime, "workerd">,
  dir: string,
  entryUrl: string,
  env: Record<string, string> | undefined,
): Promise<Launch> {
  const head = [
    `import entry from ${JSON.stringify(entryUrl)};`,
    `if (typeof entry?.fetch !== "function") throw new Error(${JSON.stringify(`the default export of ${entryUrl} has no fetch method`)});`,
    env === undefined
      ? "const handle = (request, host) => entry.fetch(request, host);"
      : `const env = ${JSON.stringify(env)};\nconst handle = (request) => entry.fetch(request, env);`,
  ];
  const path = join(dir, "launcher.mjs");
  const write = (lines: string[]) => writeFile(path, `${[...head, ...lines].join("\n")}\n`);
  switch (runtime) {
    case "bun":
      await write([
        'const server = Bun.serve({ hostname: "127.0.0.1", port: 0, fetch: handle });',
        `console.log(${JSON.stringify(LISTENING)} + server.port);`,
      ]);
      // --no-install: Bun never installs a missing import (it resolves from node_modules or fails).
      return { binary: binary("bun"), args: ["--no-install", path], env: { BUN_RUNTIME_TRANSPILER_CACHE_PATH: "0" } };
    case "deno":
      await write([
        "Deno.serve(",
        `  { hostname: "127.0.0.1", port: 0, onListen: ({ port }) => console.log(${JSON.stringify(LISTENING)} + port) },`,
        "  handle,",
        ");",
      ]);
      return {
        binary: binary("deno"),
        args: [
          "run",
          // Resolve bare imports from the node_modules npm installed, download nothing, touch no config or lock file.
          "--node-modules-dir=manual",
          "--no-config",
          "--no-lock",
          "--no-remote",
          "--cached-only",
          "--no-prompt",
          "--allow-net=127.0.0.1",
          // Packages read variables such as NODE_ENV through process.env; without this they throw.
          "--allow-env",
          path,
        ],
        // A cache of its own (removed with `dir`): nothing lands in the repository or the user's cache.
        env: { DENO_DIR: join(dir, "deno-dir"), DENO_NO_UPDATE_CHECK: "1" },
      };
    case "node": {
      let nodeServer: string;
      try {
        nodeServer = import.meta.resolve("@hono/node-server");
      } catch (error) {
        throw new Error(`the node runtime needs @hono/node-server: run npm install at the repository root (${error})`);
      }
      await write([
        `const { serve } = await import(${JSON.stringify(nodeServer)});`,
        // Node's own Request and Response, which the handler would meet in production.
        'serve({ fetch: handle, hostname: "127.0.0.1", port: 0, overrideGlobalObjects: false }, ({ port }) =>',
        `  console.log(${JSON.stringify(LISTENING)} + port),`,
        ");",
      ]);
      return { binary: process.execPath, args: [path], env: {} };
    }
  }
}

/**
 * Bundles `entry` for workerd into one module, as a Workers deployment would: no Node built-ins to fall back on, and
 * the packages as published (their built code and export conditions, as Bun and Deno run them), not the sources
 * tsconfig.sources.json's `paths` point at, which know no conditions.
 */
async function bundle(entry: string, outfile: string): Promise<void> {
  try {
    await build({ ...WORKERD_BUILD, entryPoints: [entry], outfile, tsconfigRaw: {} });
  } catch (error) {
    throw new Error(`esbuild could not bundle ${entry} for workerd: ${error instanceof Error ? error.message : error}`);
  }
}

/**
 * Bundles `entry` into `dir` and writes a workerd config serving it on 127.0.0.1, port 0: workerd reports the port
 * it bound on its control descriptor, so no port is picked beforehand for another process to take.
 */
async function workerd(entry: string, dir: string, env: Record<string, string>): Promise<Launch> {
  const command = binary("workerd");
  await bundle(entry, join(dir, "worker.mjs"));
  await writeFile(join(dir, "config.capnp"), await workerdConfig(dir, env));
  return { binary: command, args: ["serve", "--verbose", "--control-fd=3", "config.capnp"], env: {}, controlFd: true };
}

/**
 * A workerd config serving `dir`/worker.mjs, each `env` entry a text binding read from a file (capnp then needs no
 * escaping of the values). No nodejs_compat flag: the bundle must run without Node's APIs.
 */
async function workerdConfig(dir: string, env: Record<string, string>): Promise<string> {
  const bindings: string[] = [];
  for (const [index, [name, value]] of Object.entries(env).entries()) {
    if (!/^[A-Za-z_$][\w$]*$/.test(name)) {
      throw new Error(`workerd binding names are identifiers: ${JSON.stringify(name)}`);
    }
    await writeFile(join(dir, `env-${index}.txt`), value);
    bindings.push(`(name = "${name}", text = embed "env-${index}.txt")`);
  }
  return `using Workerd = import "/workerd/workerd.capnp";
const config :Workerd.Config = (
  services = [ (name = "main", worker = .app) ],
  sockets = [ (name = "http", address = "127.0.0.1:0", http = (), service = "main") ],
);
const app :Workerd.Worker = (
  modules = [ (name = "worker", esModule = embed "worker.mjs") ],
  bindings = [ ${bindings.join(", ")} ],
  compatibilityDate = "${WORKERD_COMPATIBILITY_DATE}",
);
`;
}
