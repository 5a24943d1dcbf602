// @otc/inspector's README sample (mount it): the page and the reference served beside a server's tools.
import { inspectorPage, readInspectorFiles } from "@otc/inspector";
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

// The page at /inspector, the reference at /docs.
const app = createServer({ tools: [add], pages: [inspectorPage({ files: readInspectorFiles })], logger: false });
const { url, close } = await listen(app, { port: 0 });
try {
  const pages = await Promise.all(
    ["/inspector", "/docs"].map(async (path) => {
      const response = await fetch(`${url}${path}`);
      await response.arrayBuffer();
      return `${response.status} ${response.headers.get("content-type")?.split(";")[0]}`;
    }),
  );
  // biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
  console.log(JSON.stringify({ pages }));
} finally {
  await close();
}
