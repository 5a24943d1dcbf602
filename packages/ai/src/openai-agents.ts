/** @otc/ai for OpenAI's Agents SDK: an OXP server's tools as the SDK's own function tools. */

import {
  type FunctionTool,
  type FunctionToolResult,
  type RunItem,
  type ToolsToFinalOutputResult,
  type ToolToFinalOutputFunction,
  tool,
} from "@openai/agents";
import type { OxpClient } from "@otc/client";
import type { ToolAuthorizationChallenge } from "@otc/types";
import { type OxpToolOutcome, type OxpToolSpec, type OxpToolsOptions, oxpToolSpecs } from "./core.js";

export type { OxpApproval, OxpToolsOptions } from "./core.js";

/** What an OXP tool's output item carries in its `customData.oxp`: how the call ended, for the application. */
export interface OxpOutputData {
  /** The outcome's kind: `value`, `tool-error`, `invalid-input` or `authorization`. */
  kind: OxpToolOutcome["kind"];
  /** The tool's id, with its version. */
  toolId: string;
  /** For `authorization`: where the user authorizes (`url`) and where its status shows (`check_url`). */
  challenges?: ToolAuthorizationChallenge[];
}

/**
 * Lists the server's tools and makes each an Agents SDK function tool. Its parameters are the tool's JSON Schema as
 * the server gives it (non-strict: OpenAI's strict mode would rewrite optional properties); destructive tools (or
 * those `approval` picks) need approval, so a run stops with an interruption until the call is approved. The model
 * reads a value, a tool's error or a wrong input as the call's output, and an authorization to ask for as a message
 * with its URL; {@link oxpStopOnAuthorization} ends the run there instead. Errors the model cannot act on (the
 * server unreachable, its credentials refused) fail the run.
 */
export async function oxpTools(client: OxpClient, options?: OxpToolsOptions): Promise<FunctionTool[]> {
  const specs = await oxpToolSpecs(client, options);
  const tools = specs.map(toFunctionTool);
  const names = new Set<string>();
  for (const [index, made] of tools.entries()) {
    // The SDK turns every character but letters and digits into `_`: `a-b` and `a_b` would be one tool.
    if (names.has(made.name)) {
      throw new Error(`Two of the tools selected, or ${specs[index]?.definition.id}, take the name ${made.name}`);
    }
    names.add(made.name);
  }
  return tools;
}

function toFunctionTool(spec: OxpToolSpec): FunctionTool {
  // From execute to customDataExtractor, which sees a copy of the call: the outcome by the run (its RunContext, the
  // one object both are given) and the call's id. Keyed by the id alone, two runs sharing the tools whose models
  // reuse call ids (`call_0`) would read each other's outcome; and an outcome the SDK never extracts (a call cut
  // short by a sibling's failure) goes with its run instead of staying for the tools' life.
  const outcomes = new WeakMap<object, Map<string, OxpToolOutcome>>();
  const made = tool({
    name: spec.name,
    description: spec.description,
    // The SDK types a non-strict schema as `additionalProperties: true`, but sends any JSON Schema as it is.
    parameters: spec.inputSchema as unknown as NonStrictParameters,
    strict: false,
    needsApproval: spec.needsApproval,
    // null: an error the model cannot act on fails the run rather than reading "An error occurred" to the model.
    errorFunction: null,
    execute: async (input, runContext, details) => {
      // Not the model's call id as OXP's call_id: a model may repeat its ids across conversations, and the server
      // would answer a new call with an old call's stored response. The client makes one, kept across its retries.
      const outcome = await spec.call(input, { signal: details?.signal });
      const callId = details?.toolCall?.callId;
      if (callId !== undefined && runContext !== undefined) {
        const ofRun = outcomes.get(runContext) ?? new Map<string, OxpToolOutcome>();
        outcomes.set(runContext, ofRun.set(callId, outcome));
      }
      return outcome.text;
    },
    customDataExtractor: ({ runContext, toolCall }) => {
      const ofRun = outcomes.get(runContext);
      const outcome = ofRun?.get(toolCall.callId);
      ofRun?.delete(toolCall.callId);
      if (outcome === undefined) {
        return undefined;
      }
      const data: OxpOutputData = { kind: outcome.kind, toolId: spec.definition.id };
      if (outcome.kind === "authorization") {
        data.challenges = outcome.challenges;
      }
      return { oxp: data };
    },
  });
  // As the SDK's own `Tool` type takes it: the schema's type parameter only types `needsApproval`'s input.
  return made as unknown as FunctionTool;
}

type NonStrictParameters = {
  type: "object";
  properties: Record<string, Record<string, unknown>>;
  required: string[];
  additionalProperties: true;
};

/** How an OXP tool's call ended, from its output item (in `result.newItems`) or tool result; else undefined. */
export function oxpOutputData(item: RunItem | FunctionToolResult): OxpOutputData | undefined {
  const runItem = "runItem" in item ? item.runItem : item;
  if (runItem.type !== "tool_call_output_item") {
    return undefined;
  }
  const data = runItem.customData?.oxp as OxpOutputData | undefined;
  return typeof data?.kind === "string" ? data : undefined;
}

/**
 * An agent's `toolUseBehavior` that ends the run when an OXP tool needs the user's authorization: the run's
 * `finalOutput` is the message with the URL to open, and the output item's {@link oxpOutputData} holds the
 * challenges. Once the user has authorized, run again with the history (and a message saying so). Otherwise the
 * model runs again, as by default.
 */
export const oxpStopOnAuthorization: ToolToFinalOutputFunction = (_context, toolResults): ToolsToFinalOutputResult => {
  const messages = toolResults.flatMap((result) =>
    result.type === "function_output" && oxpOutputData(result)?.kind === "authorization" ? [String(result.output)] : [],
  );
  return messages.length === 0
    ? { isFinalOutput: false, isInterrupted: undefined }
    : { isFinalOutput: true, isInterrupted: undefined, finalOutput: messages.join("\n\n") };
};
