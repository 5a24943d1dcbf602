// @otc/ai against a server that holds users' connections (docs/protocol.md 9.7, test/vault-fixture.ts): no token is passed, a missing
// connection stops each framework's run with the provider's link, once the user has connected the tool gets the vault's token (resumed, and
// in a new run), a removed connection stops the run again, and the agent's side never sees the token.
import { AIMessage, HumanMessage } from "@langchain/core/messages";
import { fakeModel } from "@langchain/core/testing";
import { Command, MemorySaver } from "@langchain/langgraph";
import {
  Agent,
  type Model,
  type ModelRequest,
  type ModelResponse,
  type protocol,
  type RunItem,
  run,
  Usage,
} from "@openai/agents";
import { createClient, type OxpClient } from "@otc/client";
import type { ToolAuthorizationChallenge } from "@otc/types";
import { generateText, isStepCount, type ModelMessage } from "ai";
import { MockLanguageModelV4 } from "ai/test";
import { createAgent } from "langchain";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import {
  isOxpAuthorizationRequest,
  oxpTools as langChainTools,
  type OxpAuthorizationRequest,
} from "../src/langchain.js";
import { oxpTools as agentsTools, oxpOutputData, oxpStopOnAuthorization } from "../src/openai-agents.js";
import { hasOxpAuthorizationChallenge, oxpAuthorizationChallenges, oxpTools as vercelTools } from "../src/vercel.js";
import { PROVIDER_ID, startVaultFixture, VAULT_API_KEY, type VaultFixture } from "./vault-fixture.js";

let vault: VaultFixture;

beforeAll(async () => {
  vault = await startVaultFixture(["vercel-ada", "langchain-ben", "agents-cleo"]);
});
afterAll(async () => {
  await vault?.close();
});

/** What crossed the wire between the agent's client and the server: every request body sent and every answer read. */
interface Traffic {
  client: OxpClient;
  /** The bodies of the POST /tools/call requests, parsed. */
  calls: { tool_id?: string; context?: unknown }[];
  /** Every request and answer body, as text. */
  wire: string[];
}

/** The agent's client of the server, with only the platform's API key, recording everything it sends and reads. */
function agentClient(): Traffic {
  const calls: Traffic["calls"] = [];
  const wire: string[] = [];
  const client = createClient({
    baseUrl: vault.server.url,
    apiKey: VAULT_API_KEY,
    retry: { maxAttempts: 1 },
    fetch: async (input, init) => {
      const request = new Request(input, init);
      const sent = await request.clone().text();
      wire.push(`${request.method} ${request.url} ${sent}`);
      if (request.method === "POST" && new URL(request.url).pathname === "/tools/call") {
        calls.push(JSON.parse(sent) as Traffic["calls"][number]);
      }
      const response = await fetch(request);
      wire.push(await response.clone().text());
      return response;
    },
  });
  return { client, calls, wire };
}

/** The one challenge a stopped run carries: the vault's flow, whose page is the provider's, its status the server's. */
function expectVaultChallenge(challenges: readonly ToolAuthorizationChallenge[]): ToolAuthorizationChallenge {
  expect(challenges).toHaveLength(1);
  const [challenge] = challenges as [ToolAuthorizationChallenge];
  // The challenge id names the provider its flow is at.
  expect(challenge.id.startsWith(`${PROVIDER_ID}.`)).toBe(true);
  const url = new URL(challenge.url);
  expect(url.origin).toBe(vault.provider.issuer);
  expect(url.searchParams.get("redirect_uri")).toBe(`${vault.server.url}/connections/callback`);
  expect(url.searchParams.get("code_challenge_method")).toBe("S256");
  expect(challenge.check_url?.startsWith(`${vault.server.url}/`)).toBe(true);
  return challenge;
}

/**
 * The user connects the account (the provider's login and consent, then the server's callback in the user's own
 * browser), and the application waits on the challenge's check_url, as it would before going on.
 */
async function connect(client: OxpClient, challenge: ToolAuthorizationChallenge, user: string): Promise<void> {
  expect(await client.checkAuthorization(challenge)).toBe("pending");
  expect(await vault.completeFlow(challenge.url, user)).toBe(200);
  expect(await client.waitForAuthorization(challenge)).toBe("completed");
}

/**
 * The token the tool was handed for `user` (the canary): the same on each of its `runs` runs, and issued by the
 * provider for that user to the vault's client, as its introspection says.
 */
async function canaryOf(user: string, runs: number): Promise<string> {
  const handed = vault.handed.filter((entry) => entry.userId === user).map((entry) => entry.token);
  expect(handed).toHaveLength(runs);
  const token = handed[0] as string;
  expect(new Set(handed)).toEqual(new Set([token]));
  const introspected = await vault.provider.introspect({
    clientId: "oxp-vault",
    clientSecret: "vault-secret",
    token,
  });
  expect(introspected).toMatchObject({ active: true, sub: user, client_id: "oxp-vault" });
  return token;
}

/**
 * The user removes the connection, as an application's settings page would (through the client, by the user's id):
 * the list the application reads shows it, without its token, and then none. Answers what the list said.
 */
async function disconnect(client: OxpClient, user: string): Promise<unknown> {
  const listed = await client.listConnections({ userId: user });
  expect(listed).toMatchObject([{ provider: PROVIDER_ID, status: "active" }]);
  await client.disconnect((listed[0] as { id: string }).id, { userId: user });
  expect(await client.listConnections({ userId: user })).toEqual([]);
  return listed;
}

/**
 * Fails unless `token` is absent from every one of `places` (each given as text, or as a value to serialize). An
 * error is serialized with its message, stack and cause, which JSON.stringify alone leaves out: a tool error's part
 * (the AI SDK's) holds one.
 */
function expectNowhere(token: string, places: Record<string, unknown>): void {
  expect(token.length).toBeGreaterThan(20);
  const withErrors = (_key: string, value: unknown) =>
    value instanceof Error
      ? { ...value, name: value.name, message: value.message, stack: value.stack, cause: value.cause }
      : value;
  for (const [where, place] of Object.entries(places)) {
    const text = typeof place === "string" ? place : JSON.stringify(place, withErrors);
    expect(text.length, where).toBeGreaterThan(0);
    expect(text.includes(token), where).toBe(false);
  }
}

/** No call carried any token: each call's context is the user id, nothing else. */
function expectNoTokenSent(calls: Traffic["calls"], user: string): void {
  expect(calls.length).toBeGreaterThan(0);
  for (const call of calls) {
    expect(call.context).toEqual({ user_id: user });
  }
}

describe("a server holding the user's connections", () => {
  it("AI SDK: stops at the missing connection with the provider's link; connected, the tool gets the vault's token", async () => {
    const user = "vercel-ada";
    const { client, calls, wire } = agentClient();
    // Nothing for tokens: the user, and the tools.
    const tools = await vercelTools(client, { tools: ["Example.WhoAmI"], userId: user });
    const usage = {
      inputTokens: { total: 1, noCache: 1, cacheRead: undefined, cacheWrite: undefined },
      outputTokens: { total: 1, text: 1, reasoning: undefined },
    };
    const whoAmI = (toolCallId: string) => ({
      content: [{ type: "tool-call" as const, toolCallId, toolName: "Example_WhoAmI", input: "{}" }],
      finishReason: { unified: "tool-calls" as const, raw: undefined },
      usage,
      warnings: [],
    });
    const answer = (text: string) => ({
      content: [{ type: "text" as const, text }],
      finishReason: { unified: "stop" as const, raw: undefined },
      usage,
      warnings: [],
    });
    const stopWhen = [isStepCount(5), hasOxpAuthorizationChallenge()];
    const messages: ModelMessage[] = [{ role: "user", content: "Which account am I signed in with?" }];
    const models: MockLanguageModelV4[] = [];
    const generate = (turns: ReturnType<typeof whoAmI | typeof answer>[], prompt: ModelMessage[]) => {
      const model = new MockLanguageModelV4({ doGenerate: turns });
      models.push(model);
      return generateText({ model, tools, messages: prompt, stopWhen });
    };
    const resultOf = (run: Awaited<ReturnType<typeof generate>>) =>
      run.steps[0]?.content.find((part) => part.type === "tool-result")?.output as { length?: number } | undefined;

    const stopped = await generate([whoAmI("call-1"), answer("x")], messages);
    expect(models[0]?.doGenerateCalls).toHaveLength(1);
    const challenge = expectVaultChallenge(oxpAuthorizationChallenges(stopped.content));
    expect(vault.handed.filter((entry) => entry.userId === user)).toEqual([]);

    await connect(client, challenge, user);
    const resumed = await generate(
      [whoAmI("call-2"), answer("You are vercel-ada.")],
      [...messages, ...stopped.response.messages],
    );
    expect(resultOf(resumed)).toEqual({ status: 200, sub: user, length: expect.any(Number) });
    expect(resumed.text).toBe("You are vercel-ada.");

    // Connected already: a new conversation runs straight through, on the same token.
    const connected = await generate([whoAmI("call-3"), answer("Still vercel-ada.")], messages);
    expect(oxpAuthorizationChallenges(connected.content)).toEqual([]);
    expect(resultOf(connected)).toEqual(resultOf(resumed));
    expect(connected.text).toBe("Still vercel-ada.");
    const token = await canaryOf(user, 2);
    expect(resultOf(resumed)?.length).toBe(token.length);

    // Disconnected, with a token the server once held: the run stops again, at a new flow.
    const listed = await disconnect(client, user);
    const again = await generate([whoAmI("call-4"), answer("x")], messages);
    expect(expectVaultChallenge(oxpAuthorizationChallenges(again.content)).id).not.toBe(challenge.id);
    expect(vault.handed.filter((entry) => entry.userId === user)).toHaveLength(2);

    expectNoTokenSent(calls, user);
    expectNowhere(token, {
      "the stopped run's steps": stopped.steps,
      "the resumed run's steps": resumed.steps,
      "the resumed run's messages": resumed.response.messages,
      "the connected run's steps": connected.steps,
      "the connected run's messages": connected.response.messages,
      "the connections listed": listed,
      "the run stopped again: its steps": again.steps,
      "the run stopped again: its messages": again.response.messages,
      "the prompts the model was sent": models.flatMap((model) => model.doGenerateCalls.map((call) => call.prompt)),
      "the client's traffic": wire.join("\n"),
    });
  });

  it("LangChain: interrupts at the missing connection with the provider's link; resumed once connected, the tool gets the vault's token", async () => {
    const user = "langchain-ben";
    const { client, calls, wire } = agentClient();
    const tools = await langChainTools(client, { tools: ["Example.WhoAmI"], userId: user });
    const checkpointer = new MemorySaver();
    const models: ReturnType<typeof fakeModel>[] = [];
    /** A new conversation (thread) with a model that calls the tool, then says `text`. */
    const conversation = (thread: string, callId: string, text: string) => {
      const model = fakeModel()
        .respondWithTools([{ name: "Example_WhoAmI", args: {}, id: callId }])
        .respond(new AIMessage(text));
      models.push(model);
      const agent = createAgent({ model, tools, checkpointer });
      const config = { configurable: { thread_id: thread } };
      return {
        model,
        config,
        ask: () => agent.invoke({ messages: [new HumanMessage("Which account am I signed in with?")] }, config),
        resume: () => agent.invoke(new Command({ resume: { type: "authorized" } }), config),
      };
    };
    const interruptOf = (state: { __interrupt__?: { value?: unknown }[] }) => {
      const [pending] = state.__interrupt__ ?? [];
      expect(isOxpAuthorizationRequest(pending?.value)).toBe(true);
      return pending?.value as OxpAuthorizationRequest;
    };
    const toolMessageOf = (state: { messages: { type: string; content: unknown }[] }) => {
      const answered = state.messages.find((message) => message.type === "tool");
      expect(answered).toMatchObject({ status: "success" });
      return JSON.parse(answered?.content as string) as { status: number; sub: string; length: number };
    };

    const first = conversation("first", "call_who", "You are langchain-ben.");
    const stopped = await first.ask();
    const request = interruptOf(stopped);
    expect(request).toMatchObject({
      kind: "oxp-authorization",
      toolId: "Example.WhoAmI@1.0.0",
      toolCallId: "call_who",
    });
    const challenge = expectVaultChallenge(request.challenges);
    expect(first.model.callCount).toBe(1);

    await connect(client, challenge, user);
    const done = await first.resume();
    expect(done.__interrupt__ ?? []).toEqual([]);
    expect(done.messages.find((message) => message.type === "tool")).toMatchObject({ tool_call_id: "call_who" });
    const value = toolMessageOf(done);
    expect(value).toMatchObject({ status: 200, sub: user });
    expect(done.messages.at(-1)?.content).toBe("You are langchain-ben.");

    // Connected already: another thread runs straight through, on the same token.
    const second = conversation("connected", "call_again", "Still langchain-ben.");
    const connected = await second.ask();
    expect(connected.__interrupt__ ?? []).toEqual([]);
    expect(toolMessageOf(connected)).toEqual(value);
    expect(connected.messages.at(-1)?.content).toBe("Still langchain-ben.");
    const token = await canaryOf(user, 2);
    expect(value.length).toBe(token.length);

    // Disconnected, with a token the server once held: the graph interrupts again, at a new flow.
    const listed = await disconnect(client, user);
    const third = conversation("disconnected", "call_third", "x");
    const stoppedAgain = await third.ask();
    const requestAgain = interruptOf(stoppedAgain);
    expect(expectVaultChallenge(requestAgain.challenges).id).not.toBe(challenge.id);
    expect(vault.handed.filter((entry) => entry.userId === user)).toHaveLength(2);

    expectNoTokenSent(calls, user);
    const checkpoints: unknown[] = [];
    const threads = new Set<unknown>();
    for await (const checkpoint of checkpointer.list({})) {
      checkpoints.push(checkpoint);
      threads.add(checkpoint.config.configurable?.thread_id);
    }
    expect(threads).toEqual(new Set(["first", "connected", "disconnected"]));
    expectNowhere(token, {
      "the interrupted run": stopped,
      "the resumed run": done,
      "the connected run": connected,
      "the connections listed": listed,
      "the run interrupted again": stoppedAgain,
      "the interrupt's value, again": requestAgain,
      "the messages the model was sent": models.flatMap((model) => model.calls.map((call) => call.messages)),
      "the checkpoints of every thread": checkpoints,
      "the client's traffic": wire.join("\n"),
    });
  });

  it("Agents SDK: ends the run at the missing connection with the provider's link; run again once connected, the tool gets the vault's token", async () => {
    const user = "agents-cleo";
    const { client, calls, wire } = agentClient();
    const tools = await agentsTools(client, { tools: ["Example.WhoAmI"], userId: user });
    const functionCall = (callId: string): protocol.OutputModelItem => ({
      type: "function_call",
      name: "Example_WhoAmI",
      callId,
      status: "completed",
      arguments: "{}",
    });
    const message = (text: string): protocol.OutputModelItem => ({
      type: "message",
      role: "assistant",
      status: "completed",
      content: [{ type: "output_text", text }],
    });
    const requests: ModelRequest[] = [];
    /** An agent whose model answers `turns` in order, one per request. */
    const agentWith = (turns: protocol.OutputModelItem[][]) => {
      let turn = 0;
      const model: Model = {
        async getResponse(request): Promise<ModelResponse> {
          requests.push(request);
          return { usage: new Usage(), output: turns[turn++] ?? [message("?")] };
        },
        // biome-ignore lint/correctness/useYield: never streamed here; the SDK's interface requires the method.
        async *getStreamedResponse() {
          throw new Error("not streamed");
        },
      };
      return new Agent({
        name: "Assistant",
        instructions: "Use the tools.",
        model,
        tools,
        toolUseBehavior: oxpStopOnAuthorization,
      });
    };
    const outputOf = (result: Ran) => {
      const output = result.newItems.find((item) => item.type === "tool_call_output_item");
      expect(output).toBeDefined();
      return output as NonNullable<typeof output>;
    };
    const stoppedAt = (result: Ran) => {
      const data = oxpOutputData(outputOf(result));
      expect(data?.kind).toBe("authorization");
      const challenge = expectVaultChallenge(data?.challenges ?? []);
      expect(String(result.finalOutput)).toContain(`- ${challenge.url}`);
      return challenge;
    };
    const valueIn = (result: Ran) => {
      const output = outputOf(result);
      expect(oxpOutputData(output)?.kind).toBe("value");
      return JSON.parse(outputText(output.rawItem)) as { status: number; sub: string; length: number };
    };

    const agent = agentWith([
      [functionCall("call-first")],
      [functionCall("call-again")],
      [message("You are agents-cleo.")],
    ]);
    const first = await run(agent, "Which account am I signed in with?");
    expect(requests).toHaveLength(1);
    const challenge = stoppedAt(first);

    await connect(client, challenge, user);
    const second = await run(agent, [...first.history, { role: "user", content: "Done, I connected it." }]);
    const value = valueIn(second);
    expect(value).toMatchObject({ status: 200, sub: user });
    expect(second.finalOutput).toBe("You are agents-cleo.");

    // Connected already: a new run goes straight through, on the same token.
    const connected = await run(
      agentWith([[functionCall("call-connected")], [message("Still agents-cleo.")]]),
      "Which account am I signed in with?",
    );
    expect(valueIn(connected)).toEqual(value);
    expect(connected.finalOutput).toBe("Still agents-cleo.");
    const token = await canaryOf(user, 2);
    expect(value.length).toBe(token.length);

    // Disconnected, with a token the server once held: the run ends again, at a new flow.
    const listed = await disconnect(client, user);
    const again = await run(agentWith([[functionCall("call-disconnected")]]), "Which account am I signed in with?");
    expect(stoppedAt(again).id).not.toBe(challenge.id);
    expect(vault.handed.filter((entry) => entry.userId === user)).toHaveLength(2);

    expectNoTokenSent(calls, user);
    expectNowhere(token, {
      "the first run's items": first.newItems,
      "the first run's state": first.state.toString(),
      "the second run's items": second.newItems,
      "the second run's history": second.history,
      "the second run's state": second.state.toString(),
      "the connected run's items": connected.newItems,
      "the connected run's state": connected.state.toString(),
      "the connections listed": listed,
      "the run ended again: its items": again.newItems,
      "the run ended again: its state": again.state.toString(),
      "the requests the model was sent": requests.map((request) => request.input),
      "the client's traffic": wire.join("\n"),
    });
  });
});

/** What a run of the Agents SDK left: its items and final output. */
interface Ran {
  newItems: RunItem[];
  finalOutput?: unknown;
}

/** The text of a function call output item as the model reads it. */
function outputText(rawItem: unknown): string {
  const output = (rawItem as { output?: unknown }).output;
  if (typeof output === "string") {
    return output;
  }
  const parts = Array.isArray(output) ? output : [output];
  return parts.map((part: { text?: string }) => part?.text ?? "").join("");
}
