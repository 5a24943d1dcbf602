#!/usr/bin/env node
/** The `otc` executable. */
import { run } from "./cli.js";

process.exitCode = await run(process.argv.slice(2), {
  stdout: (text) => process.stdout.write(text),
  stderr: (text) => process.stderr.write(text),
  env: process.env,
  ...(process.stderr.isTTY ? { terminal: { columns: process.stderr.columns || 80 } } : {}),
});
