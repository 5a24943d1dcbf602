/** One server under test, in its own process: `node bench/child.mjs '<json config>'`, driven by bench/run.mjs over IPC. */
// The parent asks for this process's own CPU accounting before and after each measured window: it counts only
// the server's work, whatever else the machine is doing. With `transport: "stdio"` in its config the server is its
// stack's `startStdio` on this process's standard input and output (driven by lib/stdio.mjs), else its `start`.
const config = JSON.parse(process.argv[2] ?? "{}");
const stack = await import(`./stacks/${config.stack}.mjs`);
const stdio = config.transport === "stdio";
const { url = "stdio:", note, pids = [], parts, stop } = await (stdio ? stack.startStdio : stack.start)(config);

process.on("message", async (message) => {
  if (message?.type === "usage") {
    // Asked with `gc` (and the process started with --expose-gc), the heap is measured after a full collection.
    if (message.gc) {
      globalThis.gc?.();
    }
    const own = process.cpuUsage();
    // A stack of several processes (the MCP bridge and its OXP server) reports theirs too: `cpu` is the sum.
    const others = parts ? await parts() : {};
    const cpu = { ...own };
    for (const part of Object.values(others)) {
      cpu.user += part.user;
      cpu.system += part.system;
    }
    process.send({
      type: "usage",
      id: message.id,
      cpu,
      ...(parts ? { parts: { self: own, ...others } } : {}),
      maxRssKb: process.resourceUsage().maxRSS,
      heapUsed: process.memoryUsage().heapUsed,
    });
  } else if (message?.type === "exit") {
    // A normal exit, so `--cpu-prof` writes its profile (a stack's other processes too: it stops them first).
    await stop?.();
    process.exit(0);
  }
});
// The parent died or let go: nothing left to serve.
process.on("disconnect", () => process.exit(0));
process.send({ type: "ready", url, note, pids });
