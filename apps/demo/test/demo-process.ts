/** The demo as a real process (dist/main.js) started with chosen environment variables, for tests of what main.ts reads. */
import { type ChildProcess, spawn } from "node:child_process";
import { once } from "node:events";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { ADAPTER } from "./harness.js";

const dist = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../dist");
const children: ChildProcess[] = [];

/** Starts dist/main.js with `env`; resolves with its URL once it listens, or with its exit code and output. */
export async function startDemoProcess(
  env: Record<string, string>,
): Promise<{ url?: string; code?: number; output: string }> {
  const child = spawn(process.execPath, [path.join(dist, "main.js")], {
    env: { ...process.env, PORT: "0", HOST: "127.0.0.1", LOG_LEVEL: "warn", OXP_ADAPTER: ADAPTER, ...env },
    stdio: ["ignore", "pipe", "pipe"],
  });
  children.push(child);
  let output = "";
  child.stdout.on("data", (chunk) => {
    output += chunk;
  });
  child.stderr.on("data", (chunk) => {
    output += chunk;
  });
  const exited = once(child, "exit").then(([code]) => ({ code: code as number, output }));
  const deadline = Date.now() + 15_000;
  while (!/listening on (http:\/\/\S+)/.test(output)) {
    if (child.exitCode !== null) {
      return exited;
    }
    if (Date.now() > deadline) {
      throw new Error(`the demo did not start: ${output}`);
    }
    await new Promise((resolve) => setTimeout(resolve, 25));
  }
  return { url: /listening on (http:\/\/\S+)/.exec(output)?.[1] as string, output };
}

/** Kills every process {@link startDemoProcess} started (for `afterEach`). */
export function stopDemoProcesses(): void {
  for (const child of children.splice(0)) {
    child.kill("SIGKILL");
  }
}
