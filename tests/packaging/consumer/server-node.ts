// @otc/server's README sample on plain node:http (@otc/server/node), in a project with @otc/server alone: no Express.
import { createHandler, defineTool, listen } from "@otc/server/node";

const echo = defineTool({
  toolkit: "Text",
  name: "Echo",
  version: "1.0.0",
  description: "Returns its text.",
  inputSchema: {
    type: "object",
    properties: { text: { type: "string", description: "The text." } },
    required: ["text"],
    additionalProperties: false,
  },
  outputSchema: { type: "string" },
  run: ({ text }) => text,
});

const handler = createHandler({ tools: [echo], logger: false });
const { url, close } = await listen(handler, { port: 0 });
try {
  const response = await fetch(`${url}/tools/call`, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ tool_id: "Text.Echo", input: { text: "hello" } }),
  });
  const express = await import("express").then(
    () => "installed",
    () => "absent",
  );
  // biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
  console.log(JSON.stringify({ value: ((await response.json()) as { value?: unknown }).value, express }));
} finally {
  await close();
}
