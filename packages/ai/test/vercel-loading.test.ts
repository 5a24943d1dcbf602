// @otc/ai/vercel's `provider` and `server` loading (docs/protocol.md 9.5) against a real server (test/fixture-server.ts), driven by the AI SDK's own mock model through generateText's loop.
import { createClient, type OxpClient, OxpExtensionUnavailableError } from "@otc/client";
import { generateText, isStepCount, toolSearch } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { oxpRepairToolCall, oxpTools } from "../src/vercel.js";
import { type FixtureServer, startFixtureServer } from "./fixture-server.js";

type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>;
type Call = MockLanguageModelV4["doGenerateCalls"][number];

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

const toolCall = (toolName: string, input: unknown, toolCallId = `call-${toolName}`): GenerateResult => ({
  content: [{ type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: [],
});

const answer = (text: string): GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: undefined },
  usage,
  warnings: [],
});

/** The names of the tools the model was offered on a step, as the SDK sent them. */
const offered = (call: Call | undefined) => (call?.tools ?? []).map((tool) => tool.name);

/** The outputs of the tool results a step's prompt carries, as the model reads them. */
const outputsOf = (call: Call | undefined) =>
  (call?.prompt ?? []).flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) => (part.type === "tool-result" ? [part.output] : []))
      : [],
  );

let server: FixtureServer;
let bare: FixtureServer;
/** The tool_ids of the POST /tools/call requests the client sent. */
let calls: string[] = [];

const recordingClient = (url: string): OxpClient =>
  createClient({
    baseUrl: url,
    retry: { maxAttempts: 1 },
    fetch: async (input, init) => {
      const request = new Request(input, init);
      if (request.method === "POST" && new URL(request.url).pathname === "/tools/call") {
        calls.push(((await request.clone().json()) as { tool_id: string }).tool_id);
      }
      return fetch(request);
    },
  });

beforeAll(async () => {
  server = await startFixtureServer();
  // A server without the search extension: what `server` loading needs.
  bare = await startFixtureServer({ extensions: ["annotations", "tasks", "pagination"] });
});
afterAll(async () => {
  await server?.close();
  await bare?.close();
});

describe('oxpTools for the AI SDK with loading: "server"', () => {
  it("offers search_tools alone; the tool it finds is offered on the next step, and its call reaches the server", async () => {
    calls = [];
    const tools = await oxpTools(recordingClient(server.url), { loading: "server" });
    expect(Object.keys(tools)).toEqual(["search_tools"]);
    const before = server.counter.value;
    const model = new MockLanguageModelV4({
      doGenerate: [
        toolCall("search_tools", { query: "counter" }),
        toolCall("Counter_Increment", { by: 7 }),
        answer("done"),
      ],
    });
    const result = await generateText({ model, tools, prompt: "add 7 to the counter", stopWhen: isStepCount(5) });

    expect(offered(model.doGenerateCalls[0])).toEqual(["search_tools"]);
    expect(offered(model.doGenerateCalls[1])).toEqual(["search_tools", "Counter_Increment"]);
    const [found] = outputsOf(model.doGenerateCalls[1]);
    expect(found).toMatchObject({
      type: "json",
      value: {
        tools: [
          expect.objectContaining({ id: "Counter.Increment@1.0.0", name: "Counter_Increment", toolkit: "Counter" }),
        ],
        message: "Each tool found is loaded: call it by its name on your next step.",
      },
    });
    const listed = model.doGenerateCalls[1]?.tools?.find((tool) => tool.name === "Counter_Increment");
    expect(listed).toMatchObject({ type: "function", inputSchema: { required: ["by"] } });
    // On the server's side: the tool ran, with the model's input.
    expect(calls).toEqual(["Counter.Increment@1.0.0"]);
    expect(server.counter.value).toBe(before + 7);
    expect(outputsOf(model.doGenerateCalls[2]).at(-1)).toEqual({ type: "json", value: { value: before + 7 } });
    expect(result.text).toBe("done");
  });

  it("loads, with oxpRepairToolCall, a tool the model calls before any search found it, and the call runs", async () => {
    calls = [];
    const tools = await oxpTools(recordingClient(server.url), { loading: "server" });
    const model = new MockLanguageModelV4({ doGenerate: [toolCall("Calculator_Add", { a: 2, b: 40 }), answer("42")] });
    const result = await generateText({
      model,
      tools,
      prompt: "2 + 40?",
      repairToolCall: oxpRepairToolCall(tools),
      stopWhen: isStepCount(5),
    });
    expect(calls).toEqual(["Calculator.Add@1.0.0"]);
    expect(outputsOf(model.doGenerateCalls[1])).toEqual([{ type: "json", value: 42 }]);
    expect(result.steps[0]?.toolResults).toMatchObject([{ toolName: "Calculator_Add", output: 42 }]);
    // And it stays loaded: offered from then on.
    expect(offered(model.doGenerateCalls[1])).toEqual(["search_tools", "Calculator_Add"]);
    expect(result.text).toBe("42");
  });

  it("asks the user's approval for a destructive tool loaded by oxpRepairToolCall, before it runs", async () => {
    calls = [];
    const tools = await oxpTools(recordingClient(server.url), { loading: "server" });
    const model = new MockLanguageModelV4({
      doGenerate: [toolCall("SMS_Send", { to: "+15550100", message: "hi" }), answer("x")],
    });
    const result = await generateText({
      model,
      tools,
      prompt: "text hi",
      repairToolCall: oxpRepairToolCall(tools),
      stopWhen: isStepCount(5),
    });
    expect(result.content.filter((part) => part.type === "tool-approval-request")).toMatchObject([
      { toolCall: { toolName: "SMS_Send" } },
    ]);
    expect(calls).toEqual([]);
  });

  it("leaves a call to a tool the server does not have to the SDK, and to the application's own repair", async () => {
    const tools = await oxpTools(recordingClient(server.url), { loading: "server" });
    const repaired: string[] = [];
    const model = new MockLanguageModelV4({ doGenerate: [toolCall("Nowhere_Tool", {}), answer("x")] });
    const result = await generateText({
      model,
      tools,
      prompt: "go",
      repairToolCall: oxpRepairToolCall(tools, async ({ toolCall: call }) => {
        repaired.push(call.toolName);
        return null;
      }),
      stopWhen: isStepCount(5),
    });
    expect(repaired).toEqual(["Nowhere_Tool"]);
    expect(result.steps[0]?.content).toMatchObject([{ type: "tool-call", invalid: true }, { type: "tool-error" }]);
    expect(Object.keys(tools)).toEqual(["search_tools"]);
  });

  it("gives the model an error it can correct for a search it cannot make, and goes on", async () => {
    const tools = await oxpTools(recordingClient(server.url), { loading: "server", toolkits: ["Calculator"] });
    const model = new MockLanguageModelV4({
      doGenerate: [toolCall("search_tools", { query: "count", toolkit: "Counter" }), answer("x")],
    });
    await generateText({ model, tools, prompt: "go", stopWhen: isStepCount(5) });
    expect(outputsOf(model.doGenerateCalls[1])).toEqual([
      {
        type: "error-text",
        value: 'Error: there is no toolkit "Counter" to search; the toolkits: Calculator.',
      },
    ]);
    expect(model.doGenerateCalls[0]?.tools?.[0]).toMatchObject({
      inputSchema: { properties: { toolkit: { enum: ["Calculator"] } } },
    });
  });

  it("fails at oxpTools, not in the run, against a server that does not offer search", async () => {
    const attempt = oxpTools(recordingClient(bare.url), { loading: "server" });
    await expect(attempt).rejects.toThrow(OxpExtensionUnavailableError);
    await expect(attempt).rejects.toThrow('oxpTools with loading: "server" needs the search extension');
  });

  it("takes oxpRepairToolCall only with a set of server loading", async () => {
    const tools = await oxpTools(recordingClient(server.url), { tools: ["Calculator.Add"] });
    expect(() => oxpRepairToolCall(tools)).toThrow(TypeError);
  });
});

describe('oxpTools for the AI SDK with loading: "provider"', () => {
  it("marks every tool deferLoading, so the SDK's toolSearch() offers only what the model finds", async () => {
    calls = [];
    const tools = await oxpTools(recordingClient(server.url), {
      loading: "provider",
      toolkits: ["Calculator", "Counter", "Greeting"],
    });
    expect(Object.values(tools).map((tool) => tool.deferLoading)).toEqual([true, true, true]);
    const model = new MockLanguageModelV4({
      doGenerate: [
        toolCall("tool_search", { query: "add two numbers together" }),
        toolCall("Calculator_Add", { a: 1, b: 2 }),
        answer("3"),
      ],
    });
    const result = await generateText({
      model,
      tools: { ...tools, tool_search: toolSearch({ maxResults: 1 }) },
      prompt: "1 + 2?",
      stopWhen: isStepCount(5),
    });
    // What the SDK sends: the deferred tools withheld, then the one found.
    expect(offered(model.doGenerateCalls[0])).toEqual(["tool_search"]);
    expect(offered(model.doGenerateCalls[1])).toEqual(["Calculator_Add", "tool_search"]);
    expect(calls).toEqual(["Calculator.Add@1.0.0"]);
    expect(result.text).toBe("3");
  });
});
