// @otc/mcp's README sample in code: the bridge to the OXP server whose URL is the first argument (the demo), served
// over streamable HTTP on a free port, and its MCP tools read.
import { createMcpBridge, serveHttp } from "@otc/mcp";

const url = process.argv[2];
if (url === undefined) {
  throw new Error("Usage: node out/mcp.js <the OXP server's URL>");
}
const bridge = createMcpBridge({ url, userId: "ann" });
const served = await serveHttp(bridge, { port: 0 });
try {
  const tools = await bridge.listTools();
  // biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
  console.log(
    JSON.stringify({
      endpoint: new URL(served.url).pathname,
      add: tools.some((tool) => tool.name === "Calculator_Add"),
    }),
  );
} finally {
  await served.close();
}
