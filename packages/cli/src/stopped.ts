/** When a long-running command (`otc mcp serve`, `otc inspect`) should stop: its signal, or SIGINT/SIGTERM. */

/** Resolves when `signal` aborts, or on SIGINT/SIGTERM when there is no signal. */
export function stopped(signal: AbortSignal | undefined): Promise<void> {
  if (signal) {
    return new Promise((resolve) => {
      if (signal.aborted) {
        resolve();
      } else {
        signal.addEventListener("abort", () => resolve(), { once: true });
      }
    });
  }
  return new Promise((resolve) => {
    const stop = () => {
      process.off("SIGINT", stop);
      process.off("SIGTERM", stop);
      resolve();
    };
    process.once("SIGINT", stop);
    process.once("SIGTERM", stop);
  });
}
