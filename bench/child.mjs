/** One server under test, in its own process: `node bench/child.mjs '<json config>'`, driven by bench/run.mjs over IPC. */
// The parent asks for this process's own CPU accounting before and after each measured window: it counts only
// the server's work, whatever else the machine is doing.
const config = JSON.parse(process.argv[2] ?? "{}");
const { start } = await import(`./stacks/${config.stack}.mjs`);
const { url, note } = await start(config);

process.on("message", (message) => {
  if (message?.type === "usage") {
    // Asked with `gc` (and the process started with --expose-gc), the heap is measured after a full collection.
    if (message.gc) {
      globalThis.gc?.();
    }
    process.send({
      type: "usage",
      id: message.id,
      cpu: process.cpuUsage(),
      maxRssKb: process.resourceUsage().maxRSS,
      heapUsed: process.memoryUsage().heapUsed,
    });
  } else if (message?.type === "exit") {
    // A normal exit, so `--cpu-prof` writes its profile.
    process.exit(0);
  }
});
// The parent died or let go: nothing left to serve.
process.on("disconnect", () => process.exit(0));
process.send({ type: "ready", url, note });
