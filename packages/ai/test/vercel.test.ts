// @otc/ai/vercel against a real server (test/fixture-server.ts), driven by the AI SDK's own mock model through generateText's loop.
import { OxpToolCallError as ClientToolCallError, createClient, type OxpClient, OxpError } from "@otc/client";
import { submitConsent } from "@otc/test-helpers/consent";
import {
  dynamicTool,
  generateText,
  isStepCount,
  jsonSchema,
  type ModelMessage,
  type ToolApprovalConfiguration,
  type ToolSet,
} from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  hasOxpAuthorizationChallenge,
  OxpToolCallError,
  oxpAuthorizationChallenges,
  oxpToolApproval,
  oxpTools,
} from "../src/vercel.js";
import { settledStatus } from "./call-status.js";
import { CONSENT_PATH, type FixtureServer, startFixtureServer } from "./fixture-server.js";

type GenerateResult = Awaited<ReturnType<MockLanguageModelV4["doGenerate"]>>;
type Prompt = MockLanguageModelV4["doGenerateCalls"][number]["prompt"];

const usage = {
  inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
  outputTokens: { total: 1, text: 1, reasoning: undefined },
};

/** A model turn that calls one tool. */
const toolCall = (toolName: string, input: unknown, toolCallId = "call-1"): GenerateResult => ({
  content: [{ type: "tool-call", toolCallId, toolName, input: JSON.stringify(input) }],
  finishReason: { unified: "tool-calls", raw: undefined },
  usage,
  warnings: [],
});

/** A model turn that answers in text and ends the loop. */
const answer = (text: string): GenerateResult => ({
  content: [{ type: "text", text }],
  finishReason: { unified: "stop", raw: undefined },
  usage,
  warnings: [],
});

type ToolOutput = ReturnType<typeof toolOutputs>[number];

/** The text of a `text` or `error-text` output; fails the test on any other kind. */
function textOf(output: ToolOutput | undefined): string {
  if (output?.type !== "text" && output?.type !== "error-text") {
    throw new Error(`Expected a text output, got ${JSON.stringify(output)}`);
  }
  return output.value;
}

/** The outputs of the tool results a prompt carries, as the model reads them. */
const toolOutputs = (prompt: Prompt | undefined) =>
  (prompt ?? []).flatMap((message) =>
    message.role === "tool"
      ? message.content.flatMap((part) => (part.type === "tool-result" ? [part.output] : []))
      : [],
  );

let server: FixtureServer;
/** The POST /tools/call requests the client sent, by tool_id: the server's side of what ran. */
let calls: string[] = [];
/** Their call_ids, in the same order. */
let callIds: string[] = [];

/** A client of the server that records its calls; `maxAttempts: 1` keeps a retryable failure from waiting. */
const serverClient = (): OxpClient =>
  createClient({
    baseUrl: server.url,
    retry: { maxAttempts: 1 },
    fetch: async (input, init) => {
      const request = new Request(input, init);
      if (request.method === "POST" && new URL(request.url).pathname.endsWith("/tools/call")) {
        const body = (await request.clone().json()) as {
          tool_id?: string;
          call_id?: string;
          request?: { tool_id?: string; call_id?: string };
        };
        calls.push(body.tool_id ?? body.request?.tool_id ?? "?");
        callIds.push(body.call_id ?? body.request?.call_id ?? "?");
      }
      return fetch(request);
    },
  });

beforeAll(async () => {
  server = await startFixtureServer();
});

afterAll(async () => {
  await server.close();
});

/** Runs the loop: the mock calls `toolName` with `input`, then answers "done". */
async function runOnce(tools: ToolSet, toolName: string, input: unknown) {
  const model = new MockLanguageModelV4({ doGenerate: [toolCall(toolName, input), answer("done")] });
  const result = await generateText({ model, tools, prompt: "go", stopWhen: isStepCount(3) });
  return { model, result, outputs: toolOutputs(model.doGenerateCalls[1]?.prompt) };
}

describe("oxpTools for the Vercel AI SDK", () => {
  it("gives the model each tool's name, description and JSON Schema as the server lists them", async () => {
    const client = serverClient();
    const tools = await oxpTools(client, { tools: ["Calculator.Add", "Counter.Increment"] });
    expect(Object.keys(tools).sort()).toEqual(["Calculator_Add", "Counter_Increment"]);
    const model = new MockLanguageModelV4({ doGenerate: [answer("nothing to do")] });
    await generateText({ model, tools, prompt: "hi" });
    const sent = model.doGenerateCalls[0]?.tools ?? [];
    const [listed] = (await client.listTools()).filter((tool) => tool.id.startsWith("Calculator.Add"));
    expect(sent.find((tool) => tool.name === "Calculator_Add")).toMatchObject({
      type: "function",
      description: "Adds two numbers together.",
      inputSchema: listed?.input_schema,
    });
  });

  it("runs the call through OXP and gives the value to the model's next turn", async () => {
    calls = [];
    const tools = await oxpTools(serverClient(), { toolkits: ["Calculator"] });
    const { result, outputs } = await runOnce(tools, "Calculator_Add", { a: 2, b: 40 });
    expect(calls).toEqual(["Calculator.Add@1.0.0"]);
    expect(outputs).toEqual([{ type: "json", value: 42 }]);
    expect(result.steps[0]?.toolResults).toMatchObject([
      { toolName: "Calculator_Add", output: 42, dynamic: true, toolMetadata: { oxpToolId: "Calculator.Add@1.0.0" } },
    ]);
    expect(result.text).toBe("done");
  });

  it("gives a tool error's message, prompt content and retry advice to the model as the tool's error", async () => {
    const tools = await oxpTools(serverClient(), { tools: ["Doorbell.Ring"] });
    const { result, outputs } = await runOnce(tools, "Doorbell_Ring", { doorbell_id: "doorbell7" });
    expect(outputs).toEqual([
      {
        type: "error-text",
        value: "Error: Doorbell ID not found\n\nids: doorbell42,doorbell84\n\nThe call may be retried after 500 ms.",
      },
    ]);
    const [failure] = result.steps[0]?.content.filter((part) => part.type === "tool-error") ?? [];
    if (!(failure?.error instanceof OxpToolCallError)) {
      throw new Error(`Expected an OxpToolCallError, got ${String(failure?.error)}`);
    }
    expect(failure.error.outcome).toMatchObject({
      kind: "tool-error",
      response: { success: false, error: { can_retry: true, retry_after_ms: 500 } },
    });
    expect(result.text).toBe("done");
  });

  it("throws @otc/client's own OxpToolCallError, so that one instanceof tells it beside a typed binding's", async () => {
    callIds = [];
    const tools = await oxpTools(serverClient(), { tools: ["Doorbell.Ring", "Calculator.Add"] });
    const { result } = await runOnce(tools, "Doorbell_Ring", { doorbell_id: "doorbell7" });
    const [failure] = result.steps[0]?.content.filter((part) => part.type === "tool-error") ?? [];
    expect(OxpToolCallError).toBe(ClientToolCallError);
    expect(failure?.error).toBeInstanceOf(OxpError);
    expect(failure?.error).toMatchObject({
      name: "OxpToolCallError",
      callId: callIds[0],
      error: { message: "Doorbell ID not found", can_retry: true },
    });
    const wrong = await runOnce(tools, "Calculator_Add", { a: "two", b: 2 });
    const [refused] = wrong.result.steps[0]?.content.filter((part) => part.type === "tool-error") ?? [];
    expect(refused?.error).toBeInstanceOf(ClientToolCallError);
    expect(refused?.error).toMatchObject({ outcome: { kind: "invalid-input" }, callId: undefined, error: undefined });
  });

  it("gives a 422's problems, by property, to the model so that it can call again", async () => {
    const tools = await oxpTools(serverClient(), { tools: ["Counter.Increment"] });
    const before = server.counter.value;
    const model = new MockLanguageModelV4({
      doGenerate: [
        toolCall("Counter_Increment", { by: 0 }),
        toolCall("Counter_Increment", { by: 2 }, "call-2"),
        answer("done"),
      ],
    });
    const result = await generateText({ model, tools, prompt: "go", stopWhen: isStepCount(5) });
    const [rejected] = toolOutputs(model.doGenerateCalls[1]?.prompt);
    expect(rejected?.type).toBe("error-text");
    expect(textOf(rejected)).toMatch(/^Error: the input for Counter_Increment does not match its schema:\n- by: .+/);
    expect(textOf(rejected)).toContain("Correct the input and call the tool again.");
    expect(toolOutputs(model.doGenerateCalls[2]?.prompt).at(-1)).toEqual({
      type: "json",
      value: { value: before + 2 },
    });
    expect(server.counter.value).toBe(before + 2);
    expect(
      result.steps.map(
        (step) => step.content.find((part) => part.type === "tool-error" || part.type === "tool-result")?.type,
      ),
    ).toEqual(["tool-error", "tool-result", undefined]);
  });

  it("tells the model where the user must authorize, and the call succeeds once the user has", async () => {
    const tools = await oxpTools(serverClient(), { tools: ["Gmail.GetEmails"], userId: "vercel-ada" });
    const { outputs } = await runOnce(tools, "Gmail_GetEmails", { query: "receipt" });
    expect(outputs).toHaveLength(1);
    const text = textOf(outputs[0]);
    expect(outputs[0]?.type).toBe("error-text");
    const url = new RegExp(`^- (http://127\\.0\\.0\\.1:\\d+${CONSENT_PATH}/\\S+)$`, "m").exec(text)?.[1];
    expect(text).toContain("Gmail_GetEmails needs the user's authorization");
    expect(url).toBeDefined();
    expect((await submitConsent(url as string, "approve")).status).toBe(303);

    const again = await runOnce(tools, "Gmail_GetEmails", { query: "receipt" });
    expect(again.outputs).toEqual([
      { type: "json", value: { emails: [{ id: "email_2", subject: "Your Receipt", snippet: expect.any(String) }] } },
    ]);
    // The authorization is the user's: another user id is asked again.
    const other = await oxpTools(serverClient(), { tools: ["Gmail.GetEmails"], userId: "vercel-bob" });
    expect((await runOnce(other, "Gmail_GetEmails", {})).outputs[0]?.type).toBe("error-text");
  });

  it("stops the loop at an authorization challenge with hasOxpAuthorizationChallenge, for the app to show it", async () => {
    const tools = await oxpTools(serverClient(), { tools: ["Gmail.GetEmails"], userId: "vercel-carol" });
    const model = new MockLanguageModelV4({
      doGenerate: [toolCall("Gmail_GetEmails", { query: "offsite" }), answer("x")],
    });
    const messages: ModelMessage[] = [{ role: "user", content: "any mail about the offsite?" }];
    const result = await generateText({
      model,
      tools,
      messages,
      stopWhen: [isStepCount(5), hasOxpAuthorizationChallenge()],
    });
    expect(model.doGenerateCalls).toHaveLength(1);
    const challenges = oxpAuthorizationChallenges(result.content);
    expect(challenges).toHaveLength(1);
    expect(challenges[0]?.url).toContain(`${server.url}${CONSENT_PATH}/`);
    expect((await submitConsent(challenges[0]?.url as string, "approve")).status).toBe(303);

    // The app continues the conversation; the model, told to call again once authorized, does.
    const next = new MockLanguageModelV4({
      doGenerate: [toolCall("Gmail_GetEmails", { query: "offsite" }, "call-2"), answer("the agenda is attached")],
    });
    const resumed = await generateText({
      model: next,
      tools,
      messages: [...messages, ...result.response.messages],
      stopWhen: [isStepCount(5), hasOxpAuthorizationChallenge()],
    });
    const outputs = toolOutputs(next.doGenerateCalls[1]?.prompt);
    expect(textOf(outputs[0])).toContain(challenges[0]?.url);
    expect(outputs[1]).toMatchObject({ type: "json", value: { emails: [{ id: "email_3" }] } });
    expect(resumed.text).toBe("the agenda is attached");
  });

  it("asks the user's approval before a destructive tool runs, and runs it once approved", async () => {
    calls = [];
    const tools = await oxpTools(serverClient(), {
      toolkits: ["SMS", "Calculator"],
      context: { secrets: [{ id: "TWILIO_API_KEY", value: "twilio-test" }] },
    });
    const model = new MockLanguageModelV4({
      doGenerate: [toolCall("SMS_Send", { to: "+15550100", message: "hi" }), answer("unreachable")],
    });
    const messages: ModelMessage[] = [{ role: "user", content: "text Ann hi" }];
    const result = await generateText({ model, tools, messages, stopWhen: isStepCount(5) });
    expect(model.doGenerateCalls).toHaveLength(1);
    expect(calls).toEqual([]);
    const request = result.content.find((part) => part.type === "tool-approval-request");
    expect(request).toMatchObject({ toolCall: { toolName: "SMS_Send", input: { to: "+15550100", message: "hi" } } });
    expect(result.content.some((part) => part.type === "tool-result" || part.type === "tool-error")).toBe(false);

    const approved = new MockLanguageModelV4({ doGenerate: [answer("sent it")] });
    const history: ModelMessage[] = [
      ...messages,
      ...result.response.messages,
      {
        role: "tool",
        content: [{ type: "tool-approval-response", approvalId: request?.approvalId as string, approved: true }],
      },
    ];
    const after = await generateText({ model: approved, tools, messages: history, stopWhen: isStepCount(5) });
    expect(calls).toEqual(["SMS.Send@0.1.2"]);
    expect(toolOutputs(approved.doGenerateCalls[0]?.prompt)).toEqual([{ type: "json", value: { status: "sent" } }]);
    expect(after.text).toBe("sent it");
  });

  it("does not run a destructive tool the user denies, nor ask for a read-only one", async () => {
    calls = [];
    const tools = await oxpTools(serverClient(), { toolkits: ["SMS"] });
    const model = new MockLanguageModelV4({ doGenerate: [toolCall("SMS_Send", { to: "+15550100", message: "hi" })] });
    const messages: ModelMessage[] = [{ role: "user", content: "text Ann hi" }];
    const result = await generateText({ model, tools, messages });
    const request = result.content.find((part) => part.type === "tool-approval-request");
    const denied = new MockLanguageModelV4({ doGenerate: [answer("not sent")] });
    await generateText({
      model: denied,
      tools,
      messages: [
        ...messages,
        ...result.response.messages,
        {
          role: "tool",
          content: [{ type: "tool-approval-response", approvalId: `${request?.approvalId}`, approved: false }],
        },
      ],
    });
    expect(calls).toEqual([]);
    expect(toolOutputs(denied.doGenerateCalls[0]?.prompt)).toMatchObject([{ type: "execution-denied" }]);

    // approval "always" asks for every tool, "never" for none.
    const always = await oxpTools(serverClient(), { tools: ["Calculator.Add"], approval: "always" });
    const asked = await runOnce(always, "Calculator_Add", { a: 1, b: 1 });
    expect(asked.result.content.some((part) => part.type === "tool-approval-request")).toBe(true);
    const never = await oxpTools(serverClient(), { toolkits: ["SMS"], approval: "never" });
    const ran = await runOnce(never, "SMS_Send", { to: "+15550100", message: "hi" });
    // Run without its secret: the server refuses, and the model reads why.
    expect(ran.outputs[0]?.type).toBe("error-text");
    expect(calls).toEqual(["SMS.Send@0.1.2"]);
  });

  it("selects tools by id, pinned version and toolkit, and rejects an id the server does not list", async () => {
    const client = serverClient();
    const pinned = await oxpTools(client, { tools: ["Greeting.Hello@1.0.0"], toolkits: ["Calculator"] });
    expect(Object.keys(pinned).sort()).toEqual(["Calculator_Add", "Greeting_Hello"]);
    const { outputs } = await runOnce(pinned, "Greeting_Hello", { name: "Ann" });
    expect(outputs).toEqual([{ type: "text", value: "Hello, Ann!" }]);
    const latest = await oxpTools(client, { toolkits: ["Greeting"] });
    expect((await runOnce(latest, "Greeting_Hello", { name: "Ann", language: "fr" })).outputs).toEqual([
      { type: "json", value: { message: "Bonjour, Ann!", language: "fr" } },
    ]);
    const both = await oxpTools(client, { tools: ["Greeting.Hello@1.0.0", "Greeting.Hello@2.0.0"] });
    expect(Object.keys(both).sort()).toEqual(["Greeting_Hello_1_0_0", "Greeting_Hello_2_0_0"]);
    await expect(oxpTools(client, { tools: ["Calculator.Divide"] })).rejects.toThrow(/Calculator\.Divide/);
  });

  it("aborts a running call with the SDK's abort signal, and the server cancels it; a quick call is still answered", async () => {
    calls = [];
    callIds = [];
    const client = serverClient();
    const tools = await oxpTools(client, { tools: ["System.Sleep"] });
    // real time: the run's own AbortSignal.timeout is what is tested; the 30 s sleep is the work it cuts short.
    const model = new MockLanguageModelV4({ doGenerate: [toolCall("System_Sleep", { ms: 30_000 }), answer("done")] });
    const started = Date.now();
    const run = generateText({
      model,
      tools,
      prompt: "wait",
      stopWhen: isStepCount(3),
      abortSignal: AbortSignal.timeout(300),
    });
    await expect(run).rejects.toThrow();
    // Ended by the abort, not by the 30 s sleep: half of it bounds a busy machine's slowness.
    expect(Date.now() - started).toBeLessThan(15_000);
    expect(calls).toEqual(["System.Sleep@1.0.0"]);
    expect(await settledStatus(client, callIds[0] ?? "")).toBe("cancelled");

    expect((await runOnce(tools, "System_Sleep", { ms: 10 })).outputs).toEqual([
      { type: "json", value: { slept_ms: 10 } },
    ]);
  });

  it("gives toolApproval each OXP tool's own approval with oxpToolApproval, which toolApproval would otherwise override", async () => {
    calls = [];
    const oxp = await oxpTools(serverClient(), {
      toolkits: ["SMS", "Calculator"],
      context: { secrets: [{ id: "TWILIO_API_KEY", value: "twilio-test" }] },
    });
    expect(oxpToolApproval(oxp)).toEqual({ SMS_Send: "user-approval", Calculator_Add: "not-applicable" });
    const tools: ToolSet = {
      ...oxp,
      Local_Wipe: dynamicTool({ inputSchema: jsonSchema({ type: "object" }), execute: async () => "wiped" }),
    };
    const sms = toolCall("SMS_Send", { to: "+15550100", message: "hi" });
    const wipe = toolCall("Local_Wipe", {}, "call-2");
    const asked = async (
      toolApproval: ToolApprovalConfiguration<ToolSet, Record<string, unknown>>,
      turn: GenerateResult,
    ) => {
      const model = new MockLanguageModelV4({ doGenerate: [turn, answer("done")] });
      const result = await generateText({ model, tools, toolApproval, prompt: "go", stopWhen: isStepCount(3) });
      // The calls waiting for the user; an automatic approval ("approved") is a request too, answered at once.
      return result.content.flatMap((part) =>
        part.type === "tool-approval-request" && part.isAutomatic !== true ? [part.toolCall.toolName] : [],
      );
    };

    // An app's own rule for its own tool, as a function, then as an object: the OXP tools keep their approval.
    const own = oxpToolApproval(tools);
    const rule = ({ toolCall: call }: { toolCall: { toolName: string } }) =>
      call.toolName === "Local_Wipe" ? "user-approval" : own[call.toolName];
    expect(await asked(rule, sms)).toEqual(["SMS_Send"]);
    expect(await asked(rule, wipe)).toEqual(["Local_Wipe"]);
    expect(await asked({ ...own, Local_Wipe: "user-approval" }, sms)).toEqual(["SMS_Send"]);
    expect(calls).toEqual([]);
    // An app's rule may still decide for an OXP tool: its own entry wins.
    expect(await asked({ ...own, SMS_Send: "approved" }, sms)).toEqual([]);
    expect(calls).toEqual(["SMS.Send@0.1.2"]);
  });
});
