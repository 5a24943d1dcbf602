// Node: `node server.js` (after tsc) or `npx tsx server.ts`. The node:http adapter is the fastest on Node;
// listen() adds graceful shutdown and connection limits.
import { createHandler, listen } from "@otc/server/node";
import { add } from "../tools.ts";

const { url } = await listen(createHandler({ tools: [add] }), {
  port: Number(process.env.PORT ?? 8080),
  handleSignals: true,
});
// biome-ignore lint/suspicious/noConsole: the example is a program: it says where it listens
console.log(`OXP tools at ${url}`);
