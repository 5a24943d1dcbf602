/**
 * The MCP bridge as an MCP host reaches OXP tools: `serveHttp(createMcpBridge(...))` (what `otc mcp serve --transport
 * http` runs) in this process, in front of our native adapter serving the same catalog in a process of its own, as
 * deployed. Both processes' CPU is reported (`parts`), so a row's CPU per call is the bridge's plus the OXP server's.
 * `startStdio` is the same over stdio (bench/child.mjs with `transport: "stdio"`).
 */
import { fork } from "node:child_process";
import { once } from "node:events";
import { fileURLToPath } from "node:url";

const CHILD = fileURLToPath(new URL("../child.mjs", import.meta.url));

/**
 * Starts the OXP server behind the bridge: `bench/child.mjs` with `stack` (`ours-native` unless told), its CPU asked
 * for over IPC. `nodeArgs` (e.g. `--cpu-prof`) go to its node.
 */
export async function startOxpServer(config, nodeArgs = []) {
  const child = fork(CHILD, [JSON.stringify({ stack: config.oxpStack ?? "ours-native", catalog: config.catalog })], {
    execArgv: nodeArgs,
    stdio: ["ignore", "ignore", "inherit", "ipc"],
  });
  const [ready] = await Promise.race([
    once(child, "message"),
    once(child, "exit").then(([code]) => {
      throw new Error(`the OXP server behind the bridge exited (${code})`);
    }),
  ]);
  const pending = new Map();
  let next = 0;
  child.on("message", (message) => {
    if (message?.type === "usage") {
      pending.get(message.id)?.(message);
      pending.delete(message.id);
    }
  });
  // This process ending (the bench's `exit`, or its parent gone) takes the OXP server with it.
  process.on("exit", () => child.kill("SIGKILL"));
  return {
    url: ready.url,
    pid: child.pid,
    /** The OXP server's own CPU so far, as `process.cpuUsage()` gives it. */
    usage: () =>
      new Promise((resolve) => {
        const id = next++;
        pending.set(id, (message) => resolve(message.cpu));
        child.send({ type: "usage", id });
      }),
    stop: async () => {
      const exited = once(child, "exit");
      child.send({ type: "exit" });
      await exited;
    },
  };
}

export async function start(config) {
  const oxp = await startOxpServer(config, config.oxpNodeArgs ?? []);
  const { createMcpBridge, serveHttp } = await import("@otc/mcp");
  const bridge = createMcpBridge({ url: oxp.url });
  const http = await serveHttp(bridge, { port: 0 });
  // Before the first measured call: the bridge reads the catalog once, as a host's tools/list would.
  await bridge.listTools();
  return {
    url: new URL(http.url).origin,
    note: "serveHttp(createMcpBridge) (`otc mcp serve --transport http`) -> our native adapter, two processes",
    pids: [oxp.pid],
    /** The OXP server's CPU, added to this process's in each usage report. */
    parts: async () => ({ oxp: await oxp.usage() }),
    stop: async () => {
      await http.close();
      await oxp.stop();
    },
  };
}

/**
 * The bridge over stdio (`otc mcp serve`, the host's child process): `serveStdio` on this process's stdin and stdout,
 * in front of the same OXP server process.
 */
export async function startStdio(config) {
  const oxp = await startOxpServer(config, config.oxpNodeArgs ?? []);
  const { createMcpBridge, serveStdio } = await import("@otc/mcp");
  const bridge = createMcpBridge({ url: oxp.url });
  await bridge.listTools();
  const served = await serveStdio(bridge);
  return {
    note: "serveStdio(createMcpBridge) (`otc mcp serve`) -> our native adapter, two processes",
    pids: [oxp.pid],
    parts: async () => ({ oxp: await oxp.usage() }),
    stop: async () => {
      await served.close();
      await oxp.stop();
    },
  };
}
