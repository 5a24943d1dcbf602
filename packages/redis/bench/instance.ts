/** A bench server in its own process: one tool, call_ids kept in Redis (`--redis URL`) or in memory (`--memory`); prints its URL. */
import { createRedisState } from "@otc/redis";
import { createServer, defineTool, listen } from "@otc/server";

const args = process.argv.slice(2);
const option = (name: string) => {
  const at = args.indexOf(name);
  return at === -1 ? undefined : args[at + 1];
};
const redisUrl = option("--redis");
const retentionMs = Number(option("--retention-ms") ?? 30_000);

const add = defineTool({
  toolkit: "Bench",
  name: "Add",
  version: "1.0.0",
  description: "Adds two numbers.",
  inputSchema: {
    type: "object",
    properties: { a: { type: "number", description: "First." }, b: { type: "number", description: "Second." } },
    required: ["a", "b"],
    additionalProperties: false,
  },
  outputSchema: { type: "number" },
  run: ({ a, b }) => a + b,
});

const state = redisUrl ? createRedisState(redisUrl) : undefined;
await state?.ready();
const app = createServer({
  tools: [add],
  logger: false,
  idempotencyRetentionMs: retentionMs,
  ...(state ? { idempotencyStore: state.idempotencyStore, tokenStore: state.tokenStore } : {}),
});
const { url } = await listen(app, { port: 0, maxConnections: 4_096 });
console.log(url);
