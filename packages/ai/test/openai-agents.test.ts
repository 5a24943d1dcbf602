// @otc/ai/openai-agents against a real server (test/fixture-server.ts): an Agent, driven by a scripted model, calls the server's tools.

import {
  Agent,
  type AgentInputItem,
  defineToolOutputGuardrail,
  type FunctionTool,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type protocol,
  type RunItem,
  type RunToolApprovalItem,
  run,
  type StreamEvent,
  setTracingDisabled,
  ToolCallError,
  ToolGuardrailFunctionOutputFactory,
  Usage,
} from "@openai/agents";
import { createClient, type OxpClient, OxpServerError } from "@otc/client";
import type { CallEvent, RunningServer } from "@otc/server";
import { submitConsent } from "@otc/test-helpers/consent";
import { afterAll, afterEach, beforeAll, describe, expect, it } from "vitest";
import { oxpOutputData, oxpStopOnAuthorization, oxpTools } from "../src/openai-agents.js";
import { settledStatus } from "./call-status.js";
import { startFixtureServer } from "./fixture-server.js";

/** One model turn: what it answers, given the request (the SDK's input so far). */
type Turn = (request: ModelRequest) => protocol.OutputModelItem[];

/** A model written to the SDK's Model interface: answers from a script and keeps every request it was sent. */
class ScriptModel implements Model {
  readonly requests: ModelRequest[] = [];
  constructor(private readonly turns: Turn[]) {}

  async getResponse(request: ModelRequest): Promise<ModelResponse> {
    return { usage: new Usage(), output: this.answer(request) };
  }

  async *getStreamedResponse(request: ModelRequest): AsyncIterable<StreamEvent> {
    const output = this.answer(request);
    yield { type: "response_started" };
    yield {
      type: "response_done",
      response: {
        id: `response-${this.requests.length}`,
        usage: { requests: 1, inputTokens: 0, outputTokens: 0, totalTokens: 0 },
        output,
      },
    };
  }

  /** The script's next turn, given the request; the request is kept. */
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

/** The text of the function call output for `callId` in a request's input, as the model reads it. */
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

const realFetch = globalThis.fetch;
/** Requests that would have left the machine (the guard refuses them). */
const outside: string[] = [];
let server: RunningServer;
/** The bodies of the POST /tools/call requests the client sent. */
let calls: Record<string, unknown>[] = [];
/** The signals of those requests, in the same order. */
let signals: AbortSignal[] = [];
let client: OxpClient;
/** The calls the server saw end, in order (its CallObserver's events). */
let ended: CallEvent[] = [];
/** Told when the server next starts, or ends, a call. */
const watchers = { started: new Set<() => void>(), ended: new Set<(event: CallEvent) => void>() };

/** Resolves when the server next starts a call (it reached the server's core). */
const nextStart = () =>
  new Promise<void>((resolve) => {
    const once = () => {
      watchers.started.delete(once);
      resolve();
    };
    watchers.started.add(once);
  });

/** Resolves with how the next call the server ends ended. */
const nextEnd = () =>
  new Promise<CallEvent>((resolve) => {
    const once = (event: CallEvent) => {
      watchers.ended.delete(once);
      resolve(event);
    };
    watchers.ended.add(once);
  });

beforeAll(async () => {
  // No trace export, and a guard besides: anything the SDK would send elsewhere than the server fails and is counted.
  setTracingDisabled(true);
  globalThis.fetch = (input, init) => {
    const url = new URL(input instanceof Request ? input.url : String(input));
    if (url.hostname !== "127.0.0.1") {
      outside.push(url.href);
      return Promise.reject(new Error(`No request leaves the machine: ${url.href}`));
    }
    return realFetch(input, init);
  };
  server = await startFixtureServer({
    observer: {
      callStarted: () => {
        for (const watcher of [...watchers.started]) {
          watcher();
        }
      },
      callEnded: (event) => {
        ended.push(event);
        for (const watcher of [...watchers.ended]) {
          watcher(event);
        }
      },
    },
  });
  client = createClient({
    baseUrl: server.url,
    retry: { maxAttempts: 1 },
    fetch: async (request) => {
      const sent = request as Request;
      if (sent.method === "POST" && new URL(sent.url).pathname === "/tools/call") {
        calls.push((await sent.clone().json()) as Record<string, unknown>);
        signals.push(sent.signal);
      }
      return globalThis.fetch(sent);
    },
  });
});
afterEach(() => {
  expect(outside).toEqual([]);
});
afterAll(async () => {
  globalThis.fetch = realFetch;
  await server?.close();
});

const agentWith = (
  tools: FunctionTool[],
  model: Model,
  options: Partial<ConstructorParameters<typeof Agent>[0]> = {},
) => new Agent({ name: "Assistant", instructions: "Use the tools.", model, tools, ...options });

describe("oxpTools for OpenAI's Agents SDK", () => {
  it("gives the model each tool's name, description and JSON Schema as they are, non-strict", async () => {
    calls = [];
    const tools = await oxpTools(client, { tools: ["Calculator.Add", "Greeting.Hello"] });
    const model = new ScriptModel([() => [message("Nothing to do.")]]);
    const result = await run(agentWith(tools, model), "Hi");
    expect(result.finalOutput).toBe("Nothing to do.");
    expect(model.requests[0]?.tools).toEqual([
      expect.objectContaining({
        type: "function",
        name: "Calculator_Add",
        description: "Adds two numbers together.",
        strict: false,
        parameters: expect.objectContaining({ required: ["a", "b"], additionalProperties: false }),
      }),
      expect.objectContaining({ name: "Greeting_Hello", strict: false }),
    ]);
    // The schema is the server's: its descriptions stay, nothing is made required that was optional.
    const hello = model.requests[0]?.tools[1] as { parameters: { required: string[] } };
    expect(hello.parameters.required).toEqual(["name"]);
    expect(calls).toEqual([]);
  });

  it("runs a call through OXP and gives the model its value as the call's output", async () => {
    calls = [];
    const tools = await oxpTools(client, { tools: ["Calculator.Add"] });
    const model = new ScriptModel([
      () => [functionCall("Calculator_Add", { a: 2, b: 3 }, "call-add")],
      (request) => [message(`The sum is ${outputFor(request, "call-add")}.`)],
    ]);
    const result = await run(agentWith(tools, model), "What is 2 + 3?");
    expect(outputFor(model.requests[1], "call-add")).toBe("5");
    expect(result.finalOutput).toBe("The sum is 5.");
    expect(calls).toEqual([expect.objectContaining({ tool_id: "Calculator.Add@1.0.0", input: { a: 2, b: 3 } })]);
    // The model's call id stays the model's; the client makes OXP's call_id.
    expect(calls[0]?.call_id).toMatch(/^[0-9a-f-]{36}$/);
    const output = result.newItems.find((item) => item.type === "tool_call_output_item");
    expect(output && oxpOutputData(output)).toEqual({ kind: "value", toolId: "Calculator.Add@1.0.0" });
  });

  it("works the same on a streamed run", async () => {
    const tools = await oxpTools(client, { tools: ["Calculator.Add"] });
    const model = new ScriptModel([
      () => [functionCall("Calculator_Add", { a: 40, b: 2 }, "call-stream")],
      () => [message("42")],
    ]);
    const result = await run(agentWith(tools, model), "40 + 2?", { stream: true });
    await result.completed;
    expect(outputFor(model.requests[1], "call-stream")).toBe("42");
    expect(result.finalOutput).toBe("42");
  });

  it("gives the model a tool's error with its additional prompt content and retry advice", async () => {
    const tools = await oxpTools(client, { tools: ["Doorbell.Ring"] });
    const model = new ScriptModel([
      () => [functionCall("Doorbell_Ring", { doorbell_id: "doorbell7" }, "call-ring")],
      () => [message("That doorbell does not exist.")],
    ]);
    const result = await run(agentWith(tools, model), "Ring doorbell7");
    const text = outputFor(model.requests[1], "call-ring");
    expect(text).toMatch(/^Error: Doorbell ID not found/);
    expect(text).toContain("ids: doorbell42,doorbell84");
    expect(text).toContain("The call may be retried after 500 ms.");
    const output = result.newItems.find((item) => item.type === "tool_call_output_item");
    expect(output && oxpOutputData(output)?.kind).toBe("tool-error");
  });

  it("gives the model what is wrong with its input, by property, so that it can call again", async () => {
    calls = [];
    const tools = await oxpTools(client, { tools: ["Calculator.Add"] });
    const model = new ScriptModel([
      () => [functionCall("Calculator_Add", { a: "two", b: 3 }, "call-wrong")],
      () => [functionCall("Calculator_Add", { a: 2, b: 3 }, "call-right")],
      () => [message("5")],
    ]);
    await run(agentWith(tools, model), "two plus three");
    const text = outputFor(model.requests[1], "call-wrong");
    expect(text).toMatch(/^Error: the input for Calculator_Add does not match its schema:\n- a: /);
    expect(text).toContain("Correct the input and call the tool again.");
    expect(outputFor(model.requests[2], "call-right")).toBe("5");
    // The SDK passed the wrong input through: the server checked it.
    expect(calls.map((call) => call.input)).toEqual([
      { a: "two", b: 3 },
      { a: 2, b: 3 },
    ]);
  });

  it("sends userId as context.user_id, and gives the model the URL where the user authorizes", async () => {
    calls = [];
    const tools = await oxpTools(client, { tools: ["Gmail.GetEmails"], userId: "agents-user-1" });
    const model = new ScriptModel([
      () => [functionCall("Gmail_GetEmails", { query: "invoice" }, "call-gmail")],
      () => [message("Please authorize first.")],
    ]);
    const result = await run(agentWith(tools, model), "Any invoices?");
    expect(calls[0]?.context).toEqual({ user_id: "agents-user-1" });
    const data = oxpOutputData(result.newItems.find((item) => item.type === "tool_call_output_item") as never);
    expect(data?.kind).toBe("authorization");
    const url = data?.challenges?.[0]?.url ?? "";
    expect(url.startsWith(`${server.url}/`)).toBe(true);
    const text = outputFor(model.requests[1], "call-gmail");
    expect(text).toContain(`- ${url}`);
    expect(text).toContain("call the tool again");
  });

  it("with oxpStopOnAuthorization, ends the run with the URL; authorized, the same call then runs", async () => {
    const tools = await oxpTools(client, { tools: ["Gmail.GetEmails"], userId: "agents-user-2" });
    const model = new ScriptModel([
      () => [functionCall("Gmail_GetEmails", { query: "invoice" }, "call-first")],
      () => [functionCall("Gmail_GetEmails", { query: "invoice" }, "call-again")],
      () => [message("One invoice is overdue.")],
    ]);
    const agent = agentWith(tools, model, { toolUseBehavior: oxpStopOnAuthorization });
    const first = await run(agent, "Any invoices?");
    // The run ended at the tool: the model was not asked again, and the user reads where to authorize.
    expect(model.requests).toHaveLength(1);
    const url = /- (http:\/\/\S+)/.exec(String(first.finalOutput))?.[1] ?? "";
    expect(url.startsWith(`${server.url}/`)).toBe(true);

    expect((await submitConsent(url, "approve")).status).toBe(303);
    const second = await run(agent, [...first.history, { role: "user", content: "Done, I authorized." }]);
    expect(JSON.parse(outputFor(model.requests[2], "call-again") ?? "null")).toEqual({
      emails: [expect.objectContaining({ id: "email_4" })],
    });
    expect(second.finalOutput).toBe("One invoice is overdue.");
  });

  it("fails the run on an error the model cannot act on (a tool that needs a user, called without one)", async () => {
    const tools = await oxpTools(client, { tools: ["Gmail.GetEmails"] });
    const model = new ScriptModel([() => [functionCall("Gmail_GetEmails", {}, "call-nouser")], () => [message("?")]]);
    const failure = await run(agentWith(tools, model), "Mail?").catch((error: unknown) => error);
    expect(failure).toBeInstanceOf(ToolCallError);
    expect((failure as ToolCallError).error).toBeInstanceOf(OxpServerError);
    expect((failure as ToolCallError).error.message).toMatch(/user id is required/);
    expect(model.requests).toHaveLength(1);
  });

  it("keeps each run's outcomes apart, though the runs share the tools and their models reuse a call id", async () => {
    const [ring] = await oxpTools(client, { tools: ["Doorbell.Ring"] });
    if (!ring) {
      throw new Error("No Doorbell_Ring tool");
    }
    // An output guardrail (run between the call and its output item) holds the first run's call there until the
    // second run has made the same call id's call and ended.
    let reached: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      reached = resolve;
    });
    let release: () => void = () => {};
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    let holding = true;
    ring.outputGuardrails = [
      defineToolOutputGuardrail({
        name: "hold-the-first",
        run: async () => {
          if (holding) {
            holding = false;
            reached();
            await released;
          }
          return ToolGuardrailFunctionOutputFactory.allow();
        },
      }),
    ];
    const failing = new ScriptModel([
      () => [functionCall("Doorbell_Ring", { doorbell_id: "doorbell7" }, "call_0")],
      () => [message("No such doorbell.")],
    ]);
    const ringing = new ScriptModel([
      () => [functionCall("Doorbell_Ring", { doorbell_id: "doorbell42" }, "call_0")],
      () => [message("Rung.")],
    ]);
    const first = run(agentWith([ring], failing), "Ring doorbell7");
    await Promise.race([
      held,
      first.then(() => {
        throw new Error("The first run ended without its call held");
      }),
    ]);
    const second = await run(agentWith([ring], ringing), "Ring doorbell42");
    release();
    const outputOf = (result: { newItems: RunItem[] }) =>
      oxpOutputData(result.newItems.find((item) => item.type === "tool_call_output_item") as RunItem);
    expect(outputOf(second)?.kind).toBe("value");
    expect(outputOf(await first)?.kind).toBe("tool-error");
  });

  it("stops at a destructive tool with an interruption, and runs it once approved", async () => {
    calls = [];
    const tools = await oxpTools(client, {
      tools: ["SMS.Send"],
      context: { secrets: [{ id: "TWILIO_API_KEY", value: "test-key" }] },
    });
    const model = new ScriptModel([
      () => [functionCall("SMS_Send", { to: "+15550100", message: "Hello" }, "call-sms")],
      () => [message("Sent.")],
    ]);
    const agent = agentWith(tools, model);
    const first = await run(agent, "Text +15550100 hello");
    expect(first.interruptions).toHaveLength(1);
    const pending = first.interruptions[0] as RunToolApprovalItem;
    expect(pending.name).toBe("SMS_Send");
    expect(JSON.parse(pending.arguments ?? "{}")).toEqual({ to: "+15550100", message: "Hello" });
    expect(calls).toEqual([]);
    expect(model.requests).toHaveLength(1);

    first.state.approve(pending);
    const second = await run(agent, first.state);
    expect(calls).toEqual([expect.objectContaining({ tool_id: "SMS.Send@0.1.2" })]);
    expect(JSON.parse(outputFor(model.requests[1], "call-sms") ?? "null")).toEqual({ status: "sent" });
    expect(second.finalOutput).toBe("Sent.");
  });

  it("does not run a destructive tool the user rejects, and tells the model so", async () => {
    calls = [];
    const tools = await oxpTools(client, { tools: ["SMS.Send"] });
    const model = new ScriptModel([
      () => [functionCall("SMS_Send", { to: "+15550100", message: "Hello" }, "call-no")],
      () => [message("Not sent.")],
    ]);
    const agent = agentWith(tools, model);
    const first = await run(agent, "Text +15550100 hello");
    first.state.reject(first.interruptions[0] as RunToolApprovalItem);
    await run(agent, first.state);
    expect(calls).toEqual([]);
    expect(outputFor(model.requests[1], "call-no")).toMatch(/not approved|rejected/i);
  });

  it("asks approval as the approval option says", async () => {
    const always = await oxpTools(client, { tools: ["Calculator.Add"], approval: "always" });
    const model = new ScriptModel([() => [functionCall("Calculator_Add", { a: 1, b: 1 })]]);
    expect((await run(agentWith(always, model), "1+1")).interruptions).toHaveLength(1);
    calls = [];
    const never = await oxpTools(client, {
      tools: ["SMS.Send"],
      approval: "never",
      context: { secrets: [{ id: "TWILIO_API_KEY", value: "test-key" }] },
    });
    const unasked = new ScriptModel([
      () => [functionCall("SMS_Send", { to: "+15550100", message: "Hi" }, "call-unasked")],
      () => [message("Sent.")],
    ]);
    expect((await run(agentWith(never, unasked), "Text hi")).interruptions).toEqual([]);
    expect(calls).toEqual([expect.objectContaining({ tool_id: "SMS.Send@0.1.2" })]);
    expect(JSON.parse(outputFor(unasked.requests[1], "call-unasked") ?? "null")).toEqual({ status: "sent" });
  });

  it("takes the tools and toolkits selected, a pinned version the one called", async () => {
    calls = [];
    const tools = await oxpTools(client, { tools: ["Greeting.Hello@1.0.0"], toolkits: ["Calculator"] });
    expect(tools.map((made) => made.name).sort()).toEqual(["Calculator_Add", "Greeting_Hello"]);
    expect(tools.find((made) => made.name === "Greeting_Hello")?.description).toContain("Deprecated:");
    const model = new ScriptModel([
      () => [functionCall("Greeting_Hello", { name: "Ada" }, "call-hello")],
      () => [message("Done")],
    ]);
    await run(agentWith(tools, model), "Greet Ada");
    expect(calls[0]?.tool_id).toBe("Greeting.Hello@1.0.0");
    // Version 1 returns a plain string; version 2 would return an object.
    expect(outputFor(model.requests[1], "call-hello")).toBe("Hello, Ada!");

    const both = await oxpTools(client, { tools: ["Greeting.Hello@1.0.0", "Greeting.Hello@2.0.0"] });
    expect(both.map((made) => made.name).sort()).toEqual(["Greeting_Hello_1_0_0", "Greeting_Hello_2_0_0"]);
    await expect(oxpTools(client, { tools: ["Nope.Missing"] })).rejects.toThrow(/Nope\.Missing/);
  });

  it("aborts the call when the run is aborted, and the server cancels it; a quick call is still answered", async () => {
    calls = [];
    signals = [];
    const tools = await oxpTools(client, { tools: ["System.Sleep"] });
    // A call of a minute: only the abort ends it sooner.
    const model = new ScriptModel([() => [functionCall("System_Sleep", { ms: 60_000 })], () => [message("?")]]);
    const controller = new AbortController();
    // The user stops the run once the server runs the call.
    void nextStart().then(() => controller.abort(new Error("The user stopped it")));
    ended = [];
    const end = nextEnd();
    await expect(run(agentWith(tools, model), "Wait", { signal: controller.signal })).rejects.toThrow();
    // The run stopped with the abort, while the call still ran at the server, which then ended it cancelled.
    expect(ended).toEqual([]);
    expect(calls).toHaveLength(1);
    expect(signals[0]?.aborted).toBe(true);
    expect(model.requests).toHaveLength(1);
    expect(await end).toMatchObject({ toolId: "System.Sleep@1.0.0", outcome: "cancelled" });
    expect(await settledStatus(client, String(calls[0]?.call_id))).toBe("cancelled");

    const quick = new ScriptModel([() => [functionCall("System_Sleep", { ms: 10 })], () => [message("Slept.")]]);
    await run(agentWith(tools, quick), "Wait a little");
    expect(outputFor(quick.requests[1], "call-System_Sleep")).toBe('{"slept_ms":10}');
  });
});
