// @otc/client's README first sample, against the server whose URL is the first argument (the demo).
import { createClient } from "@otc/client";

const baseUrl = process.argv[2];
if (baseUrl === undefined) {
  throw new Error("Usage: node out/client.js <the OXP server's URL>");
}
const client = createClient({ baseUrl });
const tools = await client.listTools();

const response = await client.callTool({ tool_id: "Calculator.Add", input: { a: 1, b: 2 } });
const result = response.success ? { value: response.value } : { error: response.error.message };
// biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
console.log(JSON.stringify({ listed: tools.some((tool) => tool.id.startsWith("Calculator.Add@")), ...result }));
