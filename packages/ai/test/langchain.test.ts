// @otc/ai/langchain against a real server (test/fixture-server.ts), driven by LangChain's own fake chat models: in a small agent loop, and in
// the langchain package's createAgent (with its human-in-the-loop middleware and LangGraph's interrupts).
import { AIMessage, type BaseMessage, HumanMessage, ToolMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { ToolInputParsingException } from "@langchain/core/tools";
import { convertToOpenAITool } from "@langchain/core/utils/function_calling";
import { FakeListChatModel } from "@langchain/core/utils/testing";
import { Command, MemorySaver } from "@langchain/langgraph";
import { createClient, type OxpClient } from "@otc/client";
import { submitConsent } from "@otc/test-helpers/consent";
import { createAgent, type HITLRequest, type HITLResponse, humanInTheLoopMiddleware } from "langchain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  isOxpAuthorizationRequest,
  NEEDS_APPROVAL_TAG,
  type OxpAuthorizationRequest,
  type OxpAuthorizationResume,
  type OxpLangChainTool,
  type OxpToolArtifact,
  oxpInterruptOn,
  oxpMetadata,
  oxpTools,
} from "../src/langchain.js";
import { settledStatus } from "./call-status.js";
import { type FixtureServer, startFixtureServer } from "./fixture-server.js";

let server: FixtureServer;
let client: OxpClient;

beforeAll(async () => {
  server = await startFixtureServer();
  client = createClient({ baseUrl: server.url });
});
afterAll(async () => {
  await server?.close();
});

/**
 * LangChain's FakeListChatModel made to answer tool calls, as LangChain's own agent tests subclass their fakes: it
 * answers its script turn by turn (then "Done."), and keeps every input and the tools bound, as a provider gets them.
 */
class ScriptedChatModel extends FakeListChatModel {
  readonly inputs: BaseMessage[][] = [];
  offered: ReturnType<typeof convertToOpenAITool>[] = [];
  readonly script: AIMessage[];

  constructor(script: AIMessage[]) {
    super({ responses: ["Done."] });
    this.script = script;
  }

  override async _generate(messages: BaseMessage[]) {
    this.inputs.push([...messages]);
    const message = this.script[this.inputs.length - 1] ?? new AIMessage("Done.");
    return { generations: [{ message, text: typeof message.content === "string" ? message.content : "" }] };
  }

  override bindTools(tools: Parameters<FakeListChatModel["bindTools"]>[0]) {
    this.offered = tools.map((tool) => convertToOpenAITool(tool));
    return this;
  }
}

const callTurn = (name: string, args: Record<string, unknown>, id = `call_${name}`) =>
  new AIMessage({ content: "", tool_calls: [{ id, name, args, type: "tool_call" }] });

/** The loop an agent runs: the model, then each tool call it makes, then the model again with the ToolMessages. */
async function runAgent(model: ScriptedChatModel, tools: readonly OxpLangChainTool[], prompt: string) {
  const bound = model.bindTools([...tools]);
  const messages: BaseMessage[] = [new HumanMessage(prompt)];
  for (let step = 0; step < 4; step++) {
    const reply = await bound.invoke(messages);
    messages.push(reply);
    if (!reply.tool_calls?.length) {
      return messages;
    }
    for (const call of reply.tool_calls) {
      const tool = tools.find((candidate) => candidate.name === call.name);
      if (!tool) {
        throw new Error(`The model called ${call.name}, which it was not given`);
      }
      messages.push(await tool.invoke({ ...call, type: "tool_call" }));
    }
  }
  throw new Error("The agent did not finish");
}

/** The ToolMessage answering `toolCallId` among the messages the model was given on its second turn. */
function toolMessageSeen(model: ScriptedChatModel, toolCallId: string): ToolMessage {
  const seen = model.inputs[1]?.find(
    (message): message is ToolMessage => ToolMessage.isInstance(message) && message.tool_call_id === toolCallId,
  );
  if (!seen) {
    throw new Error(`The model's second input holds no ToolMessage for ${toolCallId}`);
  }
  return seen;
}

describe("oxpTools for LangChain.js", () => {
  it("gives the model each tool's name, description and the server's JSON Schema as is", async () => {
    const tools = await oxpTools(client, { tools: ["Calculator.Add"] });
    const model = new ScriptedChatModel([]);
    await runAgent(model, tools, "Hi");
    const listed = (await client.listTools()).find((tool) => tool.id === "Calculator.Add@1.0.0");
    expect(model.offered).toEqual([
      {
        type: "function",
        function: {
          name: "Calculator_Add",
          description: "Adds two numbers together.",
          parameters: listed?.input_schema,
        },
      },
    ]);
  });

  it("answers a value as the ToolMessage the model reads next", async () => {
    const tools = await oxpTools(client);
    const model = new ScriptedChatModel([callTurn("Calculator_Add", { a: 2, b: 3 }, "call_add")]);
    const messages = await runAgent(model, tools, "What is 2 + 3?");

    const seen = toolMessageSeen(model, "call_add");
    expect(seen.content).toBe("5");
    expect(seen.status).toBe("success");
    expect(seen.name).toBe("Calculator_Add");
    expect((seen.artifact as OxpToolArtifact).kind).toBe("value");
    expect(seen.artifact).toMatchObject({ response: { success: true, value: 5 } });
    expect(messages.at(-1)?.content).toBe("Done.");
  });

  it("answers a tool's error with its message, additional prompt content and retry advice, status error", async () => {
    const tools = await oxpTools(client, { toolkits: ["Doorbell"] });
    const model = new ScriptedChatModel([callTurn("Doorbell_Ring", { doorbell_id: "doorbell1" }, "call_ring")]);
    await runAgent(model, tools, "Ring doorbell1");

    const seen = toolMessageSeen(model, "call_ring");
    expect(seen.status).toBe("error");
    expect(seen.content).toBe(
      "Error: Doorbell ID not found\n\nids: doorbell42,doorbell84\n\nThe call may be retried after 500 ms.",
    );
    expect(seen.artifact).toMatchObject({ kind: "tool-error", response: { success: false } });
  });

  it("answers the server's 422 with what is wrong, by property, status error", async () => {
    const tools = await oxpTools(client, { tools: ["Calculator.Add"] });
    // LangChain's own check passes Infinity as a number (the model wrote 1e999, JSON.parse made it Infinity); the
    // request carries it as null, and only the server finds it wrong.
    const model = new ScriptedChatModel([callTurn("Calculator_Add", { a: Number.POSITIVE_INFINITY, b: 1 }, "c_422")]);
    await runAgent(model, tools, "Add a huge number");

    const seen = toolMessageSeen(model, "c_422");
    expect(seen.status).toBe("error");
    expect(seen.content).toMatch(/^Error: the input for Calculator_Add does not match its schema:\n- a: .+\n/);
    expect(seen.content).toMatch(/Correct the input and call the tool again\.$/);
    expect(seen.artifact).toMatchObject({ kind: "invalid-input", parameterErrors: { a: expect.any(String) } });
  });

  it("leaves an input LangChain itself finds wrong to LangChain: it throws, naming the keyword, and nothing runs", async () => {
    const tools = await oxpTools(client, { tools: ["Counter.Increment"] });
    const [increment] = tools;
    const before = server.counter.value;
    const wrong = increment?.invoke({ id: "c0", name: "Counter_Increment", args: { by: 0 }, type: "tool_call" });
    await expect(wrong).rejects.toThrow(ToolInputParsingException);
    await expect(wrong).rejects.toThrow(/minimum/);
    expect(server.counter.value).toBe(before);
  });

  it("answers an authorization challenge with its URL; once the user approves, the same call runs", async () => {
    const tools = await oxpTools(client, { toolkits: ["Gmail"], userId: "langchain-user" });
    const model = new ScriptedChatModel([
      callTurn("Gmail_GetEmails", { query: "receipt" }, "call_mail"),
      callTurn("Gmail_GetEmails", { query: "receipt" }, "call_mail_again"),
    ]);
    const bound = model.bindTools(tools);
    const [gmail] = tools;
    if (!gmail) {
      throw new Error("No Gmail tool");
    }

    const messages: BaseMessage[] = [new HumanMessage("Find my receipt")];
    const first = await bound.invoke(messages);
    const [call] = first.tool_calls ?? [];
    messages.push(first, await gmail.invoke({ ...call, type: "tool_call" } as never));
    const asked = messages.at(-1) as ToolMessage;
    const artifact = asked.artifact as OxpToolArtifact;
    if (artifact.kind !== "authorization") {
      throw new Error(`Expected an authorization, got ${artifact.kind}`);
    }
    const url = artifact.challenges[0]?.url ?? "";
    expect(url).toMatch(/^http:\/\/127\.0\.0\.1:\d+\//);
    expect(asked.status).toBe("error");
    expect(asked.content).toContain(`- ${url}`);
    expect(asked.content).toMatch(/needs the user's authorization[\s\S]*call the tool again\.$/);

    expect((await submitConsent(url, "approve")).status).toBe(303);
    const second = await bound.invoke(messages);
    expect(model.inputs[1]).toContain(asked);
    const [again] = second.tool_calls ?? [];
    const answered = (await gmail.invoke({ ...again, type: "tool_call" } as never)) as ToolMessage;
    expect(answered.status).toBe("success");
    expect(JSON.parse(answered.content as string)).toEqual({
      emails: [{ id: "email_2", subject: "Your Receipt", snippet: "Thank you for your purchase..." }],
    });
  });

  it("sends userId as context.user_id: without it the Gmail call is refused before any challenge", async () => {
    const [gmail] = await oxpTools(client, { toolkits: ["Gmail"] });
    await expect(gmail?.invoke({ query: "" })).rejects.toThrow(/user id is required/);
  });

  it("marks the destructive tool as needing approval, for humanInTheLoopMiddleware's interruptOn", async () => {
    const tools = await oxpTools(client, { context: { secrets: [{ id: "TWILIO_API_KEY", value: "test-key" }] } });
    const sms = tools.find((tool) => tool.name === "SMS_Send");
    expect(oxpMetadata(sms as OxpLangChainTool)).toEqual({
      toolId: "SMS.Send@0.1.2",
      version: "0.1.2",
      annotations: expect.objectContaining({ destructive: true, read_only: false }),
      needsApproval: true,
    });
    expect(sms?.tags).toContain(NEEDS_APPROVAL_TAG);
    expect(oxpMetadata(tools.find((tool) => tool.name === "Calculator_Add") as OxpLangChainTool)?.needsApproval).toBe(
      false,
    );
    expect(oxpInterruptOn(tools)).toEqual({ SMS_Send: true });
    expect(oxpInterruptOn(await oxpTools(client, { approval: "never" }))).toEqual({});
    expect(oxpInterruptOn(await oxpTools(client, { tools: ["Calculator.Add"], approval: "always" }))).toEqual({
      Calculator_Add: true,
    });

    // Approval is the agent's to ask; the tool itself runs when called, with the context's secret.
    const model = new ScriptedChatModel([callTurn("SMS_Send", { to: "+15550100", message: "Hi" }, "call_sms")]);
    await runAgent(model, tools, "Text hi");
    expect(toolMessageSeen(model, "call_sms").content).toBe('{"status":"sent"}');
  });

  it("selects by tools and toolkits, and runs a pinned version", async () => {
    const tools = await oxpTools(client, { tools: ["Greeting.Hello@1.0.0"], toolkits: ["Calculator"] });
    expect(tools.map((tool) => tool.name).sort()).toEqual(["Calculator_Add", "Greeting_Hello"]);
    const hello = tools.find((tool) => tool.name === "Greeting_Hello");
    expect(oxpMetadata(hello as OxpLangChainTool)?.toolId).toBe("Greeting.Hello@1.0.0");
    expect(hello?.description).toContain("Deprecated: Use Greeting.Hello@2.0.0");

    const model = new ScriptedChatModel([callTurn("Greeting_Hello", { name: "Ada" }, "call_hello")]);
    await runAgent(model, tools, "Greet Ada");
    expect(toolMessageSeen(model, "call_hello").content).toBe("Hello, Ada!");

    await expect(oxpTools(client, { tools: ["Greeting.Hello@9.0.0"] })).rejects.toThrow(/Greeting\.Hello@9\.0\.0/);
  });

  it("aborts the call with the run's signal, and the server cancels it; a quick call is still answered", async () => {
    const { client: recording, calls, callIds } = recordingClient();
    const [sleep] = await oxpTools(recording, { tools: ["System.Sleep"] });
    const started = Date.now();
    const call = sleep?.invoke(
      // real time: the framework's own AbortSignal.timeout is what is tested; the 30 s sleep is the work it cuts short.
      { id: "call_sleep", name: "System_Sleep", args: { ms: 30_000 }, type: "tool_call" },
      { signal: AbortSignal.timeout(300) },
    );
    await expect(call).rejects.toMatchObject({ name: "TimeoutError" });
    // Ended by the abort, not by the 30 s sleep: half of it bounds a busy machine's slowness.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(calls).toHaveLength(1);
    expect(await settledStatus(recording, callIds[0] ?? "")).toBe("cancelled");

    const quick = await sleep?.invoke({ id: "call_quick", name: "System_Sleep", args: { ms: 10 }, type: "tool_call" });
    expect(quick).toMatchObject({ status: "success", content: '{"slept_ms":10}' });
  });

  it("answers bare arguments (no tool call) with the text alone", async () => {
    const [add] = await oxpTools(client, { tools: ["Calculator.Add"] });
    expect(await add?.invoke({ a: 40, b: 2 })).toBe("42");
  });
});

/** A client whose every POST /tools/call is recorded (tool id and input), to tell which calls reached the server. */
function recordingClient() {
  const calls: { tool_id: string; input: unknown }[] = [];
  /** Each call's call_id, in the same order. */
  const callIds: string[] = [];
  const recording = createClient({
    baseUrl: server.url,
    fetch: async (input, init) => {
      const request = new Request(input, init);
      if (request.method === "POST" && new URL(request.url).pathname.endsWith("/tools/call")) {
        const body = (await request.clone().json()) as { tool_id: string; input: unknown; call_id: string };
        calls.push({ tool_id: body.tool_id, input: body.input });
        callIds.push(body.call_id);
      }
      return fetch(request);
    },
  });
  return { client: recording, calls, callIds };
}

/** The ToolMessages among the messages a fake model was given on its `turn`-th call (from 0). */
function toolMessagesAt(model: ReturnType<typeof fakeModel>, turn: number): ToolMessage[] {
  return (model.calls[turn]?.messages ?? []).filter((message): message is ToolMessage =>
    ToolMessage.isInstance(message),
  );
}

describe("oxpTools in the langchain package's createAgent", () => {
  const twilio = { secrets: [{ id: "TWILIO_API_KEY", value: "test-key" }] };
  const textHi = { name: "SMS_Send", args: { to: "+15550100", message: "Hi" }, id: "call_sms" };

  it("stops before the destructive tool for humanInTheLoopMiddleware; approved, it runs through OXP", async () => {
    const { client: recording, calls } = recordingClient();
    const tools = await oxpTools(recording, { toolkits: ["SMS"], context: twilio });
    const model = fakeModel().respondWithTools([textHi]).respond(new AIMessage("Sent."));
    const agent = createAgent({
      model,
      tools,
      middleware: [humanInTheLoopMiddleware({ interruptOn: oxpInterruptOn(tools) })],
      checkpointer: new MemorySaver(),
    });
    const config = { configurable: { thread_id: "hitl-approve" } };

    const stopped = await agent.invoke({ messages: [new HumanMessage("Text hi")] }, config);
    const [pending] = stopped.__interrupt__ ?? [];
    expect((pending?.value as HITLRequest | undefined)?.actionRequests).toEqual([
      expect.objectContaining({ name: "SMS_Send", args: textHi.args }),
    ]);
    expect(calls).toEqual([]);
    expect(model.callCount).toBe(1);

    const resume: HITLResponse = { decisions: [{ type: "approve" }] };
    const done = await agent.invoke(new Command({ resume }), config);
    expect(calls).toEqual([{ tool_id: "SMS.Send@0.1.2", input: textHi.args }]);
    const [seen] = toolMessagesAt(model, 1);
    expect(seen).toMatchObject({ tool_call_id: "call_sms", status: "success", content: '{"status":"sent"}' });
    expect(done.messages.at(-1)?.content).toBe("Sent.");
  });

  it("does not run the destructive tool when the user rejects it; the model reads why", async () => {
    const { client: recording, calls } = recordingClient();
    const tools = await oxpTools(recording, { toolkits: ["SMS"], context: twilio });
    const model = fakeModel().respondWithTools([textHi]).respond(new AIMessage("Not sent."));
    const agent = createAgent({
      model,
      tools,
      middleware: [humanInTheLoopMiddleware({ interruptOn: oxpInterruptOn(tools) })],
      checkpointer: new MemorySaver(),
    });
    const config = { configurable: { thread_id: "hitl-reject" } };

    await agent.invoke({ messages: [new HumanMessage("Text hi")] }, config);
    const resume: HITLResponse = { decisions: [{ type: "reject", message: "Not to that number." }] };
    await agent.invoke(new Command({ resume }), config);
    expect(calls).toEqual([]);
    const [seen] = toolMessagesAt(model, 1);
    expect(seen).toMatchObject({ tool_call_id: "call_sms", status: "error" });
    expect(seen?.content).toContain("Not to that number.");
  });

  it("stops with LangGraph's interrupt on an authorization challenge; resumed once authorized, the same call runs", async () => {
    const { client: recording, calls } = recordingClient();
    const tools = await oxpTools(recording, { toolkits: ["Gmail"], userId: "langgraph-user" });
    const query = { name: "Gmail_GetEmails", args: { query: "receipt" }, id: "call_mail" };
    const model = fakeModel().respondWithTools([query]).respond(new AIMessage("Found it."));
    const agent = createAgent({ model, tools, checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "authorize" } };

    const stopped = await agent.invoke({ messages: [new HumanMessage("Find my receipt")] }, config);
    const [pending] = stopped.__interrupt__ ?? [];
    expect(isOxpAuthorizationRequest(pending?.value)).toBe(true);
    const request = pending?.value as OxpAuthorizationRequest;
    expect(request).toEqual({
      kind: "oxp-authorization",
      toolName: "Gmail_GetEmails",
      toolId: "Gmail.GetEmails@1.2.0",
      toolCallId: "call_mail",
      challenges: [expect.objectContaining({ url: expect.stringMatching(/^http:\/\/127\.0\.0\.1:\d+\//) })],
    });
    // Plain JSON, as a checkpointer keeps it and an application sends it to a browser.
    expect(JSON.parse(JSON.stringify(request))).toEqual(request);
    expect(model.callCount).toBe(1);

    expect((await submitConsent(request.challenges[0]?.url ?? "", "approve")).status).toBe(303);
    const resume: OxpAuthorizationResume = { type: "authorized" };
    const done = await agent.invoke(new Command({ resume }), config);
    expect(done.__interrupt__ ?? []).toEqual([]);
    expect(calls).toEqual([
      { tool_id: "Gmail.GetEmails@1.2.0", input: query.args },
      { tool_id: "Gmail.GetEmails@1.2.0", input: query.args },
    ]);
    const [seen] = toolMessagesAt(model, 1);
    expect(seen).toMatchObject({ tool_call_id: "call_mail", status: "success" });
    expect(JSON.parse(seen?.content as string)).toEqual({
      emails: [{ id: "email_2", subject: "Your Receipt", snippet: "Thank you for your purchase..." }],
    });
    expect(done.messages.at(-1)?.content).toBe("Found it.");
  });

  it("asks again when resumed before the user authorized, and tells the model when the user declines", async () => {
    const { client: recording, calls } = recordingClient();
    const tools = await oxpTools(recording, { toolkits: ["Gmail"], userId: "langgraph-decliner" });
    const model = fakeModel()
      .respondWithTools([{ name: "Gmail_GetEmails", args: { query: "receipt" }, id: "call_mail" }])
      .respond(new AIMessage("Alright."));
    const agent = createAgent({ model, tools, checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "decline" } };

    const first = await agent.invoke({ messages: [new HumanMessage("Find my receipt")] }, config);
    const authorized: OxpAuthorizationResume = { type: "authorized" };
    const again = await agent.invoke(new Command({ resume: authorized }), config);
    expect(again.__interrupt__?.map((pending) => isOxpAuthorizationRequest(pending.value))).toEqual([true]);
    expect(model.callCount).toBe(1);
    expect((again.__interrupt__?.[0]?.value as OxpAuthorizationRequest | undefined)?.challenges).toHaveLength(1);
    expect(first.__interrupt__).toHaveLength(1);
    // One call to the server for each time the run went on, none more.
    expect(calls).toHaveLength(2);

    const declined: OxpAuthorizationResume = { type: "declined", message: "The user keeps mail private." };
    const done = await agent.invoke(new Command({ resume: declined }), config);
    expect(done.__interrupt__ ?? []).toEqual([]);
    // Declined: no call at all, so no new challenge on the server and no run with a token that came meanwhile.
    expect(calls).toHaveLength(2);
    const [seen] = toolMessagesAt(model, 1);
    expect(seen?.status).toBe("error");
    expect(seen?.content).toBe(
      "Error: the user did not authorize Gmail_GetEmails, so it did not run. Do not call it again unless the user asks.\n\nThe user keeps mail private.",
    );
    expect(seen?.artifact as OxpToolArtifact | undefined).toEqual({ kind: "authorization-declined" });
  });

  it("does not call the server when the user declines, even once authorized meanwhile, each interrupt resumed by its id", async () => {
    const { client: recording, calls } = recordingClient();
    const tools = await oxpTools(recording, { toolkits: ["Gmail"], userId: "langgraph-changed-mind" });
    const model = fakeModel()
      .respondWithTools([{ name: "Gmail_GetEmails", args: { query: "receipt" }, id: "call_mail" }])
      .respond(new AIMessage("Alright."));
    const agent = createAgent({ model, tools, checkpointer: new MemorySaver() });
    const config = { configurable: { thread_id: "declined-after-consent" } };

    const stopped = await agent.invoke({ messages: [new HumanMessage("Find my receipt")] }, config);
    const [pending] = stopped.__interrupt__ ?? [];
    const request = pending?.value as OxpAuthorizationRequest;
    // The user grants access on the provider's page, then says no in the application: the answer given wins.
    expect((await submitConsent(request.challenges[0]?.url ?? "", "approve")).status).toBe(303);
    const declined: OxpAuthorizationResume = { type: "declined" };
    const done = await agent.invoke(new Command({ resume: { [pending?.id as string]: declined } }), config);
    expect(done.__interrupt__ ?? []).toEqual([]);
    expect(calls).toHaveLength(1);
    const [seen] = toolMessagesAt(model, 1);
    expect(seen).toMatchObject({ tool_call_id: "call_mail", status: "error" });
    expect(seen?.content).toMatch(/^Error: the user did not authorize Gmail_GetEmails, so it did not run\./);
  });

  it("answers an approval and an authorization in one loop, each interrupt resumed by its id, as the README does", async () => {
    const { client: recording, calls } = recordingClient();
    const tools = await oxpTools(recording, { toolkits: ["Gmail", "SMS"], userId: "langgraph-both", context: twilio });
    const mail = { name: "Gmail_GetEmails", args: { query: "receipt" }, id: "call_mail" };
    const model = fakeModel().respondWithTools([mail, textHi]).respond(new AIMessage("Done."));
    const agent = createAgent({
      model,
      tools,
      middleware: [humanInTheLoopMiddleware({ interruptOn: oxpInterruptOn(tools) })],
      checkpointer: new MemorySaver(),
    });
    const config = { configurable: { thread_id: "both" } };

    const asked: string[] = [];
    let result = await agent.invoke({ messages: [new HumanMessage("Text my last receipt")] }, config);
    while (result.__interrupt__?.length) {
      const answers: Record<string, OxpAuthorizationResume | HITLResponse> = {};
      for (const { id, value } of result.__interrupt__) {
        if (id === undefined) {
          throw new Error("An interrupt without an id");
        }
        if (isOxpAuthorizationRequest(value)) {
          asked.push(`authorize ${value.toolName}`);
          expect((await submitConsent(value.challenges[0]?.url ?? "", "approve")).status).toBe(303);
          answers[id] = { type: "authorized" };
        } else {
          const { actionRequests } = value as HITLRequest;
          asked.push(...actionRequests.map((action) => `approve ${action.name}`));
          answers[id] = { decisions: actionRequests.map(() => ({ type: "approve" as const })) };
        }
      }
      result = await agent.invoke(new Command({ resume: answers }), config);
    }

    expect(asked).toEqual(["approve SMS_Send", "authorize Gmail_GetEmails"]);
    expect(calls.filter((call) => call.tool_id.startsWith("SMS."))).toHaveLength(1);
    const seen = toolMessagesAt(model, 1);
    expect(seen.map((message) => [message.tool_call_id, message.status])).toEqual([
      ["call_mail", "success"],
      ["call_sms", "success"],
    ]);
    expect(result.messages.at(-1)?.content).toBe("Done.");
  });

  it.each([
    ["authorization: message, with a checkpointer", "message" as const, true],
    ["no checkpointer to resume from", undefined, false],
  ])("answers the challenge as the model's ToolMessage with its URL: %s", async (_name, authorization, saved) => {
    const tools = await oxpTools(client, {
      toolkits: ["Gmail"],
      userId: `langgraph-message-${String(saved)}`,
      ...(authorization === undefined ? {} : { authorization }),
    });
    const model = fakeModel()
      .respondWithTools([{ name: "Gmail_GetEmails", args: { query: "receipt" }, id: "call_mail" }])
      .respond(new AIMessage("Please open the link."));
    const agent = createAgent({ model, tools, ...(saved ? { checkpointer: new MemorySaver() } : {}) });

    const done = await agent.invoke(
      { messages: [new HumanMessage("Find my receipt")] },
      { configurable: { thread_id: "message" } },
    );
    expect(done.__interrupt__ ?? []).toEqual([]);
    const [seen] = toolMessagesAt(model, 1);
    expect(seen?.status).toBe("error");
    expect(seen?.content).toMatch(/needs the user's authorization[\s\S]*- http:\/\/127\.0\.0\.1:\d+\//);
    expect((seen?.artifact as OxpToolArtifact | undefined)?.kind).toBe("authorization");
  });
});
