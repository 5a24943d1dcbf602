#!/usr/bin/env node
/** The `oxp-conformance` executable. */
import { main } from "./cli.js";

process.exitCode = await main(process.argv.slice(2));
