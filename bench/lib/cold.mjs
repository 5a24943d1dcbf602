/** Cold start: from spawning a server to its first healthy `/health` and its first successful call. */
import { spawnSync } from "node:child_process";
import { once } from "node:events";
import { spawnPinned, track } from "./harness.mjs";
import { urlOf } from "./runtimes.mjs";

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

async function firstOk(attempt, deadline) {
  for (;;) {
    try {
      if (await attempt()) {
        return;
      }
    } catch {
      // not up yet
    }
    if (performance.now() > deadline) {
      throw new Error("no successful answer in time");
    }
    await sleep(2);
  }
}

/**
 * Spawns `command args` (a server that prints `listening on <url>` on either stream, or workerd reporting its port on
 * descriptor 3 with `controlFd`), then times, from the spawn: the first 200 on `/health` and the first successful
 * Calculator.Add call. `group` kills the whole process group after (for `npm start`, whose server is a grandchild).
 */
export async function coldStart(
  pinning,
  { command, args, env, cwd, group = false, controlFd = false, timeoutMs = 60_000 },
) {
  const started = performance.now();
  const child = track(
    spawnPinned(pinning, command, args, {
      cwd,
      env: { ...process.env, PORT: "0", HOST: "127.0.0.1", ...env },
      stdio: ["ignore", "pipe", "pipe", controlFd ? "pipe" : "ignore"],
      detached: group,
    }),
  );
  const deadline = started + timeoutMs;
  try {
    const url = await urlOf(child, { controlFd, timeoutMs, what: command });
    child.stdout.resume();
    await firstOk(async () => (await fetch(`${url}/health`)).status === 200, deadline);
    const healthMs = performance.now() - started;
    await firstOk(async () => {
      const answer = await fetch(`${url}/tools/call`, {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } }),
      });
      return answer.status === 200 && (await answer.json()).value === 3;
    }, deadline);
    return { healthMs, callMs: performance.now() - started };
  } finally {
    if (child.exitCode === null && child.signalCode === null) {
      const exited = once(child, "exit");
      if (group) {
        process.kill(-child.pid, "SIGTERM");
      } else {
        child.kill("SIGTERM");
      }
      const timer = setTimeout(() => (group ? process.kill(-child.pid, "SIGKILL") : child.kill("SIGKILL")), 5_000);
      await exited;
      clearTimeout(timer);
    }
  }
}

/** Wall time of a command run to completion, in ms; throws when it fails. */
export function wallTime(command, args, options) {
  const started = performance.now();
  const result = spawnSync(command, args, { stdio: ["ignore", "pipe", "pipe"], ...options });
  const ms = performance.now() - started;
  if (result.status !== 0) {
    throw new Error(`${command} ${args.join(" ")} failed (${result.status}): ${String(result.stderr).slice(-800)}`);
  }
  return ms;
}
