// A user's program, compiled by the packaging test against the packed packages with a strict tsc
// (skipLibCheck: false) and run: a server with one custom tool, and a client that lists and calls it.
import { createClient } from "@otc/client";
import { createServer, defineTool, listen } from "@otc/server";
import type { CallToolResponse, ToolDefinition } from "@otc/types";

const shout = defineTool({
  toolkit: "Text",
  name: "Shout",
  version: "1.0.0",
  description: "Upper-cases a text and adds an exclamation mark.",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "The text to shout." } },
    required: ["text"],
    additionalProperties: false,
  },
  outputSchema: { type: "string" },
  // `text` is a string, typed from the schema.
  run: ({ text }) => `${text.toUpperCase()}!`,
});

const running = await listen(createServer({ tools: [shout], logger: false }), { port: 0 });
try {
  const client = createClient({ baseUrl: running.url });
  const tools: ToolDefinition[] = await client.listTools();
  const response: CallToolResponse = await client.callTool({ tool_id: "Text.Shout", input: { text: "hello" } });
  const result = response.success ? { value: response.value } : { error: response.error.message };
  // biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
  console.log(JSON.stringify({ tools: tools.map((tool) => tool.id), ...result }));
} finally {
  await running.close();
}
