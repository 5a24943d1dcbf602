// An agent developer's program with Vercel's AI SDK, compiled by the packaging test against the packed @otc/ai and @otc/client
// (strict tsc, skipLibCheck: false), and run against the demo server the test starts (its URL is the first argument):
// the framework's own test model calls Calculator_Add, the framework runs the call through OXP, and the program prints
// what the model's next turn read.
import { oxpTools as vercelTools } from "@otc/ai/vercel";
import { createClient } from "@otc/client";
import { generateText, isStepCount } from "ai";
import { MockLanguageModelV4 } from "ai/test";

const baseUrl = process.argv[2];
if (baseUrl === undefined) {
  throw new Error("Usage: node out/ai-vercel.js <the OXP server's URL>");
}
const client = createClient({ baseUrl });
const add = { a: 2, b: 40 };

// The AI SDK: generateText's loop with its mock model, which calls the tool and then answers.
const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};
const mock = new MockLanguageModelV4({
  doGenerate: [
    {
      content: [{ type: "tool-call", toolCallId: "call-1", toolName: "Calculator_Add", input: JSON.stringify(add) }],
      finishReason: { unified: "tool-calls", raw: undefined },
      usage,
      warnings: [],
    },
    { content: [{ type: "text", text: "42" }], finishReason: { unified: "stop", raw: undefined }, usage, warnings: [] },
  ],
});
await generateText({
  model: mock,
  tools: await vercelTools(client, { tools: ["Calculator.Add"] }),
  prompt: "What is 2 + 40?",
  stopWhen: isStepCount(3),
});
const vercel = (mock.doGenerateCalls[1]?.prompt ?? []).flatMap((message) =>
  message.role === "tool" ? message.content.flatMap((part) => (part.type === "tool-result" ? [part.output] : [])) : [],
);

// biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
console.log(JSON.stringify({ vercel }));
