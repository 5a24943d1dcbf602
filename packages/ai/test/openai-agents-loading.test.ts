// @otc/ai/openai-agents' `provider` and `server` loading (docs/protocol.md 9.5) against a real server (test/fixture-server.ts): an Agent, driven by a scripted model, finds and calls the server's tools.
import {
  Agent,
  type AgentInputItem,
  type FunctionTool,
  type Model,
  ModelBehaviorError,
  type ModelRequest,
  type ModelResponse,
  type protocol,
  run,
  type StreamEvent,
  setTracingDisabled,
  toolSearchTool,
  Usage,
} from "@openai/agents";
import { createClient, type OxpClient, OxpExtensionUnavailableError } from "@otc/client";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oxpRunOptions, oxpTools } from "../src/openai-agents.js";
import { type FixtureServer, startFixtureServer, TOOLKITS } from "./fixture-server.js";

/** One model turn: what it answers, given the request. */
type Turn = (request: ModelRequest) => protocol.OutputModelItem[];

/** A model written to the SDK's Model interface: answers from a script and keeps every request it was sent. */
class ScriptModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly turns: Turn[]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    return { usage: new Usage(), output: this.answer(request) };
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    yield { type: "response_started" };
    yield {
      type: "response_done",
      response: {
        id: `response-${this.requests.length}`,
        usage: { requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        output: this.answer(request),
      },
    };
  }

  /** The names of the tools offered on each request, as the SDK serialized them for the model. */
  offered(): string[][] {
    return this.requests.map((request) => request.tools.map((tool) => tool.name));
  }

  private answer(request: ModelRequest): protocol.OutputModelItem[] {
    this.requests.push(request);
    const turn = this.turns[this.requests.length - 1];
    if (turn === undefined) {
      throw new Error(`The script has no turn ${this.requests.length}`);
    }
    return turn(request);
  }
}

const functionCall = (name: string, input: unknown, callId = `call-${name}`): protocol.OutputModelItem => ({
  type: "function_call",
  name,
  callId,
  status: "completed",
  arguments: JSON.stringify(input),
});

const message = (text: string): protocol.OutputModelItem => ({
  type: "message",
  role: "assistant",
  status: "completed",
  content: [{ type: "output_text", text }],
});

/** The output text of the function call `callId` in a request's input, as the model reads it. */
function outputFor(request: ModelRequest | undefined, callId: string): string | undefined {
  const items = typeof request?.input === "string" ? [] : (request?.input ?? []);
  const result = items.find((item: AgentInputItem) => item.type === "function_call_result" && item.callId === callId) as
    | { output: unknown }
    | undefined;
  const output = result?.output;
  if (typeof output === "string" || output === undefined) {
    return output;
  }
  const parts = Array.isArray(output) ? output : [output];
  return parts.map((part: { text?: string }) => part.text ?? "").join("");
}

let server: FixtureServer;
let bare: FixtureServer;
/** The bodies of the POST /tools/call requests the client sent. */
let calls: { tool_id: string; input: unknown }[] = [];

const recordingClient = (url: string): OxpClient =>
  createClient({
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

const agentWith = (tools: Agent["tools"], model: Model) =>
  new Agent({ name: "Assistant", instructions: "Use the tools.", model, tools });

beforeAll(async () => {
  setTracingDisabled(true);
  server = await startFixtureServer();
  bare = await startFixtureServer({ extensions: ["annotations", "tasks", "pagination"] });
});
afterAll(async () => {
  await server?.close();
  await bare?.close();
});

describe('oxpTools for the Agents SDK with loading: "server"', () => {
  it("offers search_tools alone; the tool it finds is offered on the next turn, and its call reaches the server", async () => {
    calls = [];
    const tools = await oxpTools(recordingClient(server.url), { loading: "server" });
    expect(tools.map((tool) => tool.name)).toEqual(["search_tools"]);
    const before = server.counter.value;
    const model = new ScriptModel([
      () => [functionCall("search_tools", { query: "counter" })],
      () => [functionCall("Counter_Increment", { by: 3 })],
      () => [message("done")],
    ]);
    const result = await run(agentWith(tools, model), "Add 3 to the counter");

    expect(model.offered()).toEqual([
      ["search_tools"],
      ["search_tools", "Counter_Increment"],
      ["search_tools", "Counter_Increment"],
    ]);
    expect(JSON.parse(outputFor(model.requests[1], "call-search_tools") ?? "")).toEqual({
      tools: [
        expect.objectContaining({ id: "Counter.Increment@1.0.0", name: "Counter_Increment", toolkit: "Counter" }),
      ],
      message: "Each tool found is loaded: call it by its name on your next step.",
    });
    expect(model.requests[1]?.tools[1]).toMatchObject({ type: "function", parameters: { required: ["by"] } });
    // On the server's side: the tool ran, with the model's input.
    expect(calls).toEqual([{ tool_id: "Counter.Increment@1.0.0", input: { by: 3 } }]);
    expect(server.counter.value).toBe(before + 3);
    expect(outputFor(model.requests[2], "call-Counter_Increment")).toBe(JSON.stringify({ value: before + 3 }));
    expect(result.finalOutput).toBe("done");
  });

  it("with oxpRunOptions, loads a tool the model calls before any search found it, and the run goes on to call it", async () => {
    calls = [];
    const tools = await oxpTools(recordingClient(server.url), { loading: "server" });
    const model = new ScriptModel([
      () => [functionCall("Calculator_Add", { a: 2, b: 40 }, "call-1")],
      () => [functionCall("Calculator_Add", { a: 2, b: 40 }, "call-2")],
      () => [message("42")],
    ]);
    const result = await run(agentWith(tools, model), "2 + 40?", oxpRunOptions(tools));
    expect(outputFor(model.requests[1], "call-1")).toBe(
      "Error: Calculator_Add was not loaded yet, so it did not run. It is loaded now: call it again with the same arguments.",
    );
    expect(model.offered()[1]).toEqual(["search_tools", "Calculator_Add"]);
    expect(outputFor(model.requests[2], "call-2")).toBe("42");
    expect(calls).toEqual([{ tool_id: "Calculator.Add@1.0.0", input: { a: 2, b: 40 } }]);
    expect(result.finalOutput).toBe("42");
  });

  it("without oxpRunOptions, a call to a tool not loaded fails the run, as the SDK does by default", async () => {
    const tools = await oxpTools(recordingClient(server.url), { loading: "server" });
    const model = new ScriptModel([() => [functionCall("Calculator_Add", { a: 1, b: 1 })]]);
    await expect(run(agentWith(tools, model), "1 + 1?")).rejects.toThrow(ModelBehaviorError);
  });

  it("leaves a name the server does not have to the SDK's message, or the application's formatter", async () => {
    const tools = await oxpTools(recordingClient(server.url), { loading: "server" });
    const model = new ScriptModel([() => [functionCall("Nowhere_Tool", {}, "call-x")], () => [message("ok")]]);
    await run(agentWith(tools, model), "go", oxpRunOptions(tools, { toolErrorFormatter: () => "no such tool, sorry" }));
    expect(outputFor(model.requests[1], "call-x")).toBe("no such tool, sorry");
    expect(tools.map((tool) => tool.name)).toEqual(["search_tools"]);
  });

  it("fails at oxpTools, not in the run, against a server that does not offer search", async () => {
    await expect(oxpTools(recordingClient(bare.url), { loading: "server" })).rejects.toThrow(
      OxpExtensionUnavailableError,
    );
  });

  it("takes oxpRunOptions only with the tools of server loading", async () => {
    const tools = await oxpTools(recordingClient(server.url), { tools: ["Calculator.Add"] });
    expect(() => oxpRunOptions(tools)).toThrow(TypeError);
  });
});

describe('oxpTools for the Agents SDK with loading: "provider"', () => {
  it("sends every tool deferred, in its toolkit's namespace, beside toolSearchTool(); the tool loaded runs", async () => {
    calls = [];
    const tools = await oxpTools(recordingClient(server.url), {
      loading: "provider",
      toolkits: ["Calculator", "Counter", "Greeting"],
    });
    const model = new ScriptModel([
      // OpenAI's tool search, run by OpenAI (execution "server"): the call, the namespace it loaded, then the call.
      () => [
        {
          type: "tool_search_call",
          callId: "search-1",
          execution: "server",
          status: "completed",
          arguments: { paths: ["Calculator"] },
        },
        {
          type: "tool_search_output",
          callId: "search-1",
          execution: "server",
          status: "completed",
          tools: [
            {
              type: "namespace",
              name: "Calculator",
              description: TOOLKITS.Calculator.description,
              tools: [{ type: "function", name: "Calculator_Add" }],
            },
          ],
        },
        { ...functionCall("Calculator_Add", { a: 1, b: 2 }), namespace: "Calculator" } as protocol.OutputModelItem,
      ],
      () => [message("3")],
    ]);
    const result = await run(agentWith([...tools, toolSearchTool()], model), "1 + 2?");

    const sent = model.requests[0]?.tools ?? [];
    expect(sent.filter((tool) => tool.type === "function")).toEqual([
      expect.objectContaining({
        name: "Calculator_Add",
        deferLoading: true,
        namespace: "Calculator",
        namespaceDescription: "Arithmetic on numbers.",
      }),
      // A toolkit the server does not describe gets a description naming it: a namespace must have one.
      expect.objectContaining({
        name: "Greeting_Hello",
        deferLoading: true,
        namespace: "Greeting",
        namespaceDescription: "The Greeting tools.",
      }),
      expect.objectContaining({
        name: "Counter_Increment",
        deferLoading: true,
        namespace: "Counter",
        namespaceDescription: "A counter kept on the server.",
      }),
    ]);
    expect(sent.filter((tool) => tool.type === "hosted_tool")).toEqual([
      expect.objectContaining({ name: "tool_search", providerData: expect.objectContaining({ type: "tool_search" }) }),
    ]);
    expect(calls).toEqual([{ tool_id: "Calculator.Add@1.0.0", input: { a: 1, b: 2 } }]);
    expect(result.finalOutput).toBe("3");
  });

  it("keeps eager tools as they were: not deferred, in no namespace", async () => {
    const tools: FunctionTool[] = await oxpTools(recordingClient(server.url), { toolkits: ["Calculator"] });
    const model = new ScriptModel([() => [message("hi")]]);
    await run(agentWith(tools, model), "hi");
    expect(model.requests[0]?.tools[0]).not.toHaveProperty("namespace");
    expect(model.requests[0]?.tools[0]).toMatchObject({ deferLoading: false });
  });
});
