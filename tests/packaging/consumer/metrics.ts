// @otc/server's metrics with prom-client, the optional peer they need: a registry of the user's own, typed as theirs.
import { createHandler, createTelemetry, listen } from "@otc/server/node";
import { Counter, Registry } from "prom-client";

const registry = new Registry();
const telemetry = await createTelemetry({ metrics: { registry }, logger: false });
// `telemetry.registry` is the user's prom-client Registry: their own metrics register in it.
const mine: Registry | undefined = telemetry.registry;
new Counter({ name: "mine_total", help: "The user's own counter.", registers: mine ? [mine] : [] }).inc();
const { url, close } = await listen(createHandler({ tools: [], telemetry, logger: false }), { port: 0 });
try {
  const page = await (await fetch(`${url}/metrics`)).text();
  // biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
  console.log(JSON.stringify({ mine: page.includes("mine_total 1"), calls: page.includes("oxp_calls_total") }));
} finally {
  await close();
}
