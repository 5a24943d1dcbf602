#!/usr/bin/env node
// The `otc` command: runs the built entry point, dist/main.js. In a checkout where it is not
// built yet, says how to build it instead of failing with a stack trace.
import { fileURLToPath } from "node:url";

const entry = new URL("../dist/main.js", import.meta.url);

try {
  await import(entry.href);
} catch (error) {
  const notBuilt =
    error?.code === "ERR_MODULE_NOT_FOUND" &&
    (error.url === undefined ? String(error.message).includes(fileURLToPath(entry)) : error.url === entry.href);
  if (!notBuilt) {
    throw error;
  }
  // biome-ignore lint/suspicious/noConsole: before anything is loaded there is no Io to write through
  console.error("otc is not built yet: run `npm run build` at the repository root, then try again.");
  process.exit(1);
}
