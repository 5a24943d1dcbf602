// A server for the throughput benchmark, in its own process: `node bench/serve.mjs <mode>` prints its URL.
// Modes: express (createServer, as deployed), express-validated (responses checked too, as in tests),
// core (OxpCore behind a bare node:http adapter: what the protocol core costs without Express and the validator).
import { createDemoApp } from "@otc/demo/app";
import { demoTools } from "@otc/demo/tools";
import { listen } from "@otc/server";
import { coreStandIn } from "./stacks/core-standin.mjs";

const mode = process.argv[2] ?? "express";

if (mode === "core") {
  console.log(await coreStandIn({ tools: demoTools() }));
} else {
  const { app } = createDemoApp({ logger: false, validateResponses: mode === "express-validated" });
  const { url } = await listen(app, { port: 0, handleSignals: true });
  console.log(url);
}
