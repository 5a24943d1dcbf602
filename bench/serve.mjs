// A server for the throughput benchmark, in its own process: `node bench/serve.mjs <mode>` prints its URL.
// Modes: express (createServer, as deployed), express-validated (responses checked too, as in tests),
// node (createHandler: the node:http adapter, without Express and its validator). None logs.
import { createDemoApp } from "@otc/demo/app";
import { demoTools } from "@otc/demo/tools";
import { createHandler, listen } from "@otc/server";

const mode = process.argv[2] ?? "express";
// The load generator is one client: its fair share would refuse it (429s counted as errors). This measures throughput.
const options = { logger: false, fairness: false };

const app =
  mode === "node"
    ? createHandler({ ...options, tools: demoTools() })
    : createDemoApp({ ...options, validateResponses: mode === "express-validated" }).app;
const { url } = await listen(app, { port: 0, handleSignals: true });
console.log(url);
