// @otc/server's README quick start (Express), as a user runs it with what that README installs: the server, then one
// call to it with fetch, so that nothing but the server's install line is in the project.
import { createServer, defineTool, listen } from "@otc/server";

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
  run: ({ a, b }) => a + b,
});

const app = createServer({ tools: [add], auth: { apiKeys: ["change-me"] }, logger: false });
const { url, close } = await listen(app, { port: 0 });
try {
  const headers = { "content-type": "application/json", "oxp-api-key": "change-me" };
  const call = (body: unknown) => fetch(`${url}/tools/call`, { method: "POST", headers, body: JSON.stringify(body) });
  const answer = (await (await call({ tool_id: "Calculator.Add", input: { a: 2, b: 40 } })).json()) as {
    value?: unknown;
  };
  // A body without tool_id: refused by the contract check (express-openapi-validator), a 400.
  const malformed = (await call({ input: {} })).status;
  // biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
  console.log(JSON.stringify({ value: answer.value, malformed }));
} finally {
  await close();
}
