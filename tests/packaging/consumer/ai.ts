// An agent developer's program, compiled by the packaging test against the packed @otc/ai and @otc/client with each
// framework at the version packages/ai pins (strict tsc, skipLibCheck: false), and run against the demo server the
// test starts (its URL is the first argument). In each framework, that framework's own test model calls
// Calculator_Add, the framework runs the call through OXP, and the program prints what the model's next turn read.
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { INTERRUPT, isInterrupted, MemorySaver, MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import {
  Agent,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type protocol,
  run,
  setTracingDisabled,
  Usage,
} from "@openai/agents";
import { isOxpAuthorizationRequest, oxpTools as langchainTools, oxpInterruptOn } from "@otc/ai/langchain";
import { oxpTools as agentsTools } from "@otc/ai/openai-agents";
import { oxpTools as vercelTools } from "@otc/ai/vercel";
import { createClient } from "@otc/client";
import { generateText, isStepCount } from "ai";
import { MockLanguageModelV4 } from "ai/test";

const baseUrl = process.argv[2];
if (baseUrl === undefined) {
  throw new Error("Usage: node out/ai.js <the OXP server's URL>");
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

// LangChain: the tool invoked with the model's tool call, as an agent's tool node does, answers a ToolMessage.
const langchain = await langchainTools(client, { toolkits: ["Calculator", "SMS"] });
const answered = await langchain
  .find((tool) => tool.name === "Calculator_Add")
  ?.invoke({ id: "call-1", name: "Calculator_Add", args: add, type: "tool_call" });
const toolMessage = answered instanceof ToolMessage ? { content: answered.content, status: answered.status } : null;

// LangGraph: a ToolNode with a checkpointer runs the Gmail tool, which needs the user's authorization; the run stops
// with LangGraph's interrupt carrying the challenge (@otc/ai loads @langchain/langgraph, an optional peer, for it).
const graph = new StateGraph(MessagesAnnotation)
  .addNode("tools", new ToolNode(await langchainTools(client, { toolkits: ["Gmail"], userId: "packaging-user" })))
  .addEdge("__start__", "tools")
  .compile({ checkpointer: new MemorySaver() });
const mailCall = { id: "call-2", name: "Gmail_GetEmails", args: { query: "receipt" }, type: "tool_call" as const };
const stopped = await graph.invoke(
  { messages: [new AIMessage({ content: "", tool_calls: [mailCall] })] },
  { configurable: { thread_id: "packaging" } },
);
const authorization = isInterrupted(stopped)
  ? stopped[INTERRUPT].map(({ value }) => (isOxpAuthorizationRequest(value) ? value.toolName : null))
  : [];

// The Agents SDK: a model written to its Model interface calls the tool, then repeats the output it was given.
class ScriptModel implements Model {
  private turn = 0;

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    this.turn += 1;
    return { usage: new Usage(), output: this.turn === 1 ? [this.call(request)] : [this.reply(request)] };
  }

  getStreamedResponse(): AsyncIterable<protocol.StreamEvent> {
    throw new Error("This model does not stream");
  }

  private call(request: ModelRequest): protocol.OutputModelItem {
    const name = request.tools.some((tool) => tool.name === "SMS_Send") ? "SMS_Send" : "Calculator_Add";
    const input = name === "SMS_Send" ? { to: "+15550100", message: "hi" } : add;
    return { type: "function_call", callId: "call-1", name, status: "completed", arguments: JSON.stringify(input) };
  }

  private reply(request: ModelRequest): protocol.OutputModelItem {
    const items = typeof request.input === "string" ? [] : request.input;
    const result = items.find((item) => item.type === "function_call_result");
    const output = result?.type === "function_call_result" ? result.output : undefined;
    // The SDK gives a function's text output as a text part (or parts).
    const parts = typeof output === "string" || output === undefined ? [] : Array.isArray(output) ? output : [output];
    const text = typeof output === "string" ? output : parts.map((part) => ("text" in part ? part.text : "")).join("");
    return { type: "message", role: "assistant", status: "completed", content: [{ type: "output_text", text }] };
  }
}
setTracingDisabled(true);
const agent = new Agent({
  name: "Calculator",
  model: new ScriptModel(),
  tools: await agentsTools(client, { tools: ["Calculator.Add"] }),
});
const agents = (await run(agent, "What is 2 + 40?")).finalOutput;
// SMS.Send is destructive: the run stops for the user's approval before anything is sent.
const sms = new Agent({
  name: "Texter",
  model: new ScriptModel(),
  tools: await agentsTools(client, { toolkits: ["SMS"] }),
});
const interrupted = (await run(sms, "Text hi")).interruptions.map((item) => item.name);

// biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
console.log(
  JSON.stringify({
    vercel,
    langchain: toolMessage,
    authorization,
    agents,
    interruptOn: oxpInterruptOn(langchain),
    interrupted,
  }),
);
