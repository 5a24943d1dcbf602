// The tools every example serves: one Calculator tool, written once, runnable on any runtime.
import { defineTool } from "@otc/server/fetch";

export const add = defineTool({
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
