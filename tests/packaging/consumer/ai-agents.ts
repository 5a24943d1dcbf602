// An agent developer's program with OpenAI's Agents SDK, compiled by the packaging test against the packed @otc/ai and @otc/client
// (strict tsc, skipLibCheck: false), and run against the demo server the test starts (its URL is the first argument):
// the framework's own test model calls Calculator_Add, the framework runs the call through OXP, and the program prints
// what the model's next turn read.
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
import { oxpTools as agentsTools } from "@otc/ai/openai-agents";
import { createClient } from "@otc/client";

const baseUrl = process.argv[2];
if (baseUrl === undefined) {
  throw new Error("Usage: node out/ai-agents.js <the OXP server's URL>");
}
const client = createClient({ baseUrl });
const add = { a: 2, b: 40 };

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
console.log(JSON.stringify({ agents, interrupted }));
