// @otc/redis's README sample, without an authorization provider: a server whose call results and tokens live in the
// Redis whose URL is the first argument; the same call_id sent twice runs the tool once.
import { createRedisState } from "@otc/redis";
import { createServer, defineTool, listen } from "@otc/server";

const redisUrl = process.argv[2];
if (redisUrl === undefined) {
  throw new Error("Usage: node out/redis.js <redis://...>");
}
let runs = 0;
const add = defineTool({
  toolkit: "Calculator",
  name: "Add",
  version: "1.0.0",
  description: "Adds two numbers together.",
  inputSchema: {
    type: "object",
    properties: {
      a: { type: "number", description: "The first number." },
      b: { type: "number", description: "The second number." },
    },
    required: ["a", "b"],
    additionalProperties: false,
  },
  outputSchema: { type: "number" },
  run: ({ a, b }) => {
    runs += 1;
    return a + b;
  },
});

const state = createRedisState(redisUrl, { keyPrefix: `packaging-${process.pid}:` });
await state.ready();
const app = createServer({
  tools: [add],
  idempotencyStore: state.idempotencyStore,
  tokenStore: state.tokenStore,
  logger: false,
});
const running = await listen(app, { port: 0 });
try {
  const call = async () => {
    const response = await fetch(`${running.url}/tools/call`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ tool_id: "Calculator.Add", call_id: "packaging-1", input: { a: 2, b: 40 } }),
    });
    return ((await response.json()) as { value?: unknown }).value;
  };
  // biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
  console.log(JSON.stringify({ values: [await call(), await call()], runs }));
} finally {
  await running.close();
  await state.close();
}
