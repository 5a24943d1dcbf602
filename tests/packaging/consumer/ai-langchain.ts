// An agent developer's program with LangChain.js and LangGraph, compiled by the packaging test against the packed @otc/ai and @otc/client
// (strict tsc, skipLibCheck: false), and run against the demo server the test starts (its URL is the first argument):
// the framework's own test model calls Calculator_Add, the framework runs the call through OXP, and the program prints
// what the model's next turn read.
import { AIMessage, ToolMessage } from "@langchain/core/messages";
import { INTERRUPT, isInterrupted, MemorySaver, MessagesAnnotation, StateGraph } from "@langchain/langgraph";
import { ToolNode } from "@langchain/langgraph/prebuilt";
import { isOxpAuthorizationRequest, oxpTools as langchainTools, oxpInterruptOn } from "@otc/ai/langchain";
import { createClient } from "@otc/client";

const baseUrl = process.argv[2];
if (baseUrl === undefined) {
  throw new Error("Usage: node out/ai-langchain.js <the OXP server's URL>");
}
const client = createClient({ baseUrl });
const add = { a: 2, b: 40 };

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

// biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
console.log(JSON.stringify({ langchain: toolMessage, authorization, interruptOn: oxpInterruptOn(langchain) }));
