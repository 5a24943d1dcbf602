// @otc/ai/langchain's `provider` and `server` loading (docs/protocol.md 9.5) against a real server (test/fixture-server.ts), driven by LangChain's fake chat model in the langchain package's createAgent.
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Command, MemorySaver } from "@langchain/langgraph";
import { createClient, type OxpClient, OxpExtensionUnavailableError } from "@otc/client";
import {
  createAgent,
  type HITLRequest,
  type HITLResponse,
  humanInTheLoopMiddleware,
  providerToolSearchMiddleware,
} from "langchain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type OxpSearchArtifact, oxpInterruptOn, oxpSearchMiddleware, oxpTools } from "../src/langchain.js";
import { type FixtureServer, startFixtureServer } from "./fixture-server.js";

let server: FixtureServer;
let bare: FixtureServer;

beforeAll(async () => {
  server = await startFixtureServer();
  bare = await startFixtureServer({ extensions: ["annotations", "tasks", "pagination"] });
});
afterAll(async () => {
  await server?.close();
  await bare?.close();
});

/** A client of `url` that records the body of each POST /tools/call it sends. */
function recordingClient(url = server.url): { client: OxpClient; calls: { tool_id: string; input: unknown }[] } {
  const calls: { tool_id: string; input: unknown }[] = [];
  const client = createClient({
    baseUrl: url,
    retry: { maxAttempts: 1 },
    fetch: async (input, init) => {
      const request = new Request(input, init);
      if (request.method === "POST" && new URL(request.url).pathname === "/tools/call") {
        const body = (await request.clone().json()) as { tool_id: string; input: unknown };
        calls.push({ tool_id: body.tool_id, input: body.input });
      }
      return fetch(request);
    },
  });
  return { client, calls };
}

type Bound = Parameters<FakeListChatModel["bindTools"]>[0];

/**
 * LangChain's FakeListChatModel made to answer tool calls, as LangChain's own agent tests subclass their fakes: it
 * answers its script turn by turn, and keeps each model call's input and the tools createAgent bound for it.
 */
class ScriptedChatModel extends FakeListChatModel {
  readonly inputs: BaseMessage[][] = [];
  /** The tools of each bindTools call, as createAgent (and its middleware) handed them to the model. */
  readonly bound: Bound[] = [];

  constructor(private readonly script: AIMessage[]) {
    super({ responses: ["Done."] });
  }

  override async _generate(messages: BaseMessage[]) {
    this.inputs.push([...messages]);
    const message = this.script[this.inputs.length - 1] ?? new AIMessage("Done.");
    return { generations: [{ message, text: typeof message.content === "string" ? message.content : "" }] };
  }

  override bindTools(tools: Bound) {
    this.bound.push(tools);
    return this;
  }

  /** The names of the tools bound for each model call. */
  boundNames(): string[][] {
    return this.bound.map((tools) => tools.map((tool) => (tool as { name?: string }).name ?? "?"));
  }

  /** The ToolMessages the model was given on its `turn`-th call (from 0). */
  toolMessagesAt(turn: number): ToolMessage[] {
    return (this.inputs[turn] ?? []).filter((message): message is ToolMessage => ToolMessage.isInstance(message));
  }
}

const callTurn = (name: string, args: Record<string, unknown>, id = `call_${name}`) =>
  new AIMessage({ content: "", tool_calls: [{ id, name, args, type: "tool_call" }] });

describe('oxpTools for LangChain with loading: "server", in createAgent with oxpSearchMiddleware', () => {
  it("offers search_tools alone; the tool it finds is offered on the next model call, and its call reaches the server", async () => {
    const { client, calls } = recordingClient();
    const tools = await oxpTools(client, { loading: "server" });
    expect(tools.map((tool) => tool.name)).toEqual(["search_tools"]);
    const before = server.counter.value;
    const model = new ScriptedChatModel([
      callTurn("search_tools", { query: "counter" }),
      callTurn("Counter_Increment", { by: 5 }),
      new AIMessage("done"),
    ]);
    const agent = createAgent({ model, tools, middleware: [oxpSearchMiddleware(tools)] });
    const result = await agent.invoke({ messages: [new HumanMessage("add 5 to the counter")] });

    expect(model.boundNames()).toEqual([
      ["search_tools"],
      ["search_tools", "Counter_Increment"],
      ["search_tools", "Counter_Increment"],
    ]);
    const [found] = model.toolMessagesAt(1);
    expect(found).toMatchObject({ name: "search_tools", status: "success" });
    const artifact = found?.artifact as OxpSearchArtifact | undefined;
    expect(artifact?.result.tools).toEqual([
      expect.objectContaining({ id: "Counter.Increment@1.0.0", name: "Counter_Increment", toolkit: "Counter" }),
    ]);
    expect(JSON.parse(found?.content as string)).toEqual(artifact?.result);
    // On the server's side: the tool ran, with the model's input.
    expect(calls).toEqual([{ tool_id: "Counter.Increment@1.0.0", input: { by: 5 } }]);
    expect(server.counter.value).toBe(before + 5);
    expect(model.toolMessagesAt(2).at(-1)).toMatchObject({ name: "Counter_Increment", status: "success" });
    expect(result.messages.at(-1)?.content).toBe("done");
    // The array the application holds grew too, for a loop of its own.
    expect(tools.map((tool) => tool.name)).toEqual(["search_tools", "Counter_Increment"]);
  });

  it("loads and runs a tool the model calls before any search found it, and the run goes on", async () => {
    const { client, calls } = recordingClient();
    const tools = await oxpTools(client, { loading: "server" });
    const model = new ScriptedChatModel([callTurn("Calculator_Add", { a: 2, b: 40 }), new AIMessage("42")]);
    const agent = createAgent({ model, tools, middleware: [oxpSearchMiddleware(tools)] });
    const result = await agent.invoke({ messages: [new HumanMessage("2 + 40?")] });
    expect(calls).toEqual([{ tool_id: "Calculator.Add@1.0.0", input: { a: 2, b: 40 } }]);
    expect(model.toolMessagesAt(1)).toMatchObject([{ name: "Calculator_Add", status: "success", content: "42" }]);
    expect(model.boundNames()[1]).toEqual(["search_tools", "Calculator_Add"]);
    expect(result.messages.at(-1)?.content).toBe("42");
  });

  it("answers a call to a tool the server does not have as the agent does, and goes on", async () => {
    const tools = await oxpTools(recordingClient().client, { loading: "server" });
    const model = new ScriptedChatModel([callTurn("Nowhere_Tool", {})]);
    const agent = createAgent({ model, tools, middleware: [oxpSearchMiddleware(tools)] });
    await agent.invoke({ messages: [new HumanMessage("go")] });
    expect(model.toolMessagesAt(1)).toMatchObject([
      { status: "error", content: expect.stringContaining("Nowhere_Tool is not a valid tool") },
    ]);
  });

  it("loads a destructive tool called before a search, runs it only when called again, after the user's approval", async () => {
    const { client, calls } = recordingClient();
    const tools = await oxpTools(client, {
      loading: "server",
      context: { secrets: [{ id: "TWILIO_API_KEY", value: "test-key" }] },
    });
    const interruptOn = oxpInterruptOn(tools);
    const args = { to: "+15550100", message: "Hi" };
    const model = new ScriptedChatModel([
      callTurn("SMS_Send", args, "call_1"),
      callTurn("SMS_Send", args, "call_2"),
      new AIMessage("Sent."),
    ]);
    const agent = createAgent({
      model,
      tools,
      middleware: [oxpSearchMiddleware(tools), humanInTheLoopMiddleware({ interruptOn })],
      checkpointer: new MemorySaver(),
    });
    const config = { configurable: { thread_id: "server-loading-approval" } };
    const stopped = await agent.invoke({ messages: [new HumanMessage("Text hi")] }, config);

    expect(model.toolMessagesAt(1)).toMatchObject([
      { tool_call_id: "call_1", status: "error", content: expect.stringContaining("SMS_Send was not loaded yet") },
    ]);
    expect(interruptOn).toEqual({ SMS_Send: true });
    const [pending] = stopped.__interrupt__ ?? [];
    expect((pending?.value as HITLRequest | undefined)?.actionRequests).toEqual([
      expect.objectContaining({ name: "SMS_Send", args }),
    ]);
    expect(calls).toEqual([]);

    const resume: HITLResponse = { decisions: [{ type: "approve" }] };
    const done = await agent.invoke(new Command({ resume }), config);
    expect(calls).toEqual([{ tool_id: "SMS.Send@0.1.2", input: args }]);
    expect(done.messages.at(-1)?.content).toBe("Sent.");
  });

  it("gives the model a search the server refuses as an error ToolMessage", async () => {
    const tools = await oxpTools(recordingClient().client, { loading: "server" });
    const [search] = tools;
    // Past the 32 terms a query may have (docs/protocol.md 9.5): the server's 400, which the model can correct.
    const query = Array.from({ length: 40 }, (_, index) => `w${index}`).join(" ");
    const message = await search?.invoke({ name: "search_tools", args: { query }, id: "c1", type: "tool_call" });
    expect(message).toMatchObject({
      status: "error",
      content: expect.stringMatching(/^Error: the server refused the search: .*32/),
    });
    expect((message as ToolMessage).artifact).toBeUndefined();
  });

  it("takes oxpSearchMiddleware only with the tools of server loading", async () => {
    const tools = await oxpTools(recordingClient().client, { tools: ["Calculator.Add"] });
    expect(() => oxpSearchMiddleware(tools)).toThrow(TypeError);
  });

  it("fails at oxpTools, not in the run, against a server that does not offer search", async () => {
    await expect(oxpTools(recordingClient(bare.url).client, { loading: "server" })).rejects.toThrow(
      OxpExtensionUnavailableError,
    );
  });
});

/** The chat model providerToolSearchMiddleware hands a deferred catalog to: it gates on the provider's class name. */
class ScriptedOpenAIModel extends ScriptedChatModel {
  static override lc_name() {
    return "ChatOpenAI";
  }
}

describe('oxpTools for LangChain with loading: "provider"', () => {
  it("marks every tool defer_loading, and providerToolSearchMiddleware hands them to the model deferred, with tool_search", async () => {
    const tools = await oxpTools(recordingClient().client, {
      loading: "provider",
      toolkits: ["Calculator", "Counter"],
    });
    expect(tools.map((tool) => tool.extras)).toEqual([{ defer_loading: true }, { defer_loading: true }]);
    const model = new ScriptedOpenAIModel([new AIMessage("nothing to do")]);
    const agent = createAgent({ model, tools, middleware: [providerToolSearchMiddleware()] });
    await agent.invoke({ messages: [new HumanMessage("hi")] });
    expect(model.bound[0]).toEqual([
      expect.objectContaining({ name: "Calculator_Add", extras: { defer_loading: true } }),
      expect.objectContaining({ name: "Counter_Increment", extras: { defer_loading: true } }),
      { type: "tool_search" },
    ]);
  });

  it("leaves eager tools without extras", async () => {
    const tools = await oxpTools(recordingClient().client, { toolkits: ["Calculator"] });
    expect(tools[0]?.extras).toBeUndefined();
  });
});
