// @otc/types's README sample: a typed request, and a response checked by the precompiled validator.
import type { CallToolRequest, CallToolResponse } from "@otc/types";
import { OXP_VERSION, validateCallToolResponse } from "@otc/types";

const request: CallToolRequest = { tool_id: "Calculator.Add@1.0.0", input: { a: 1, b: 2 } };

function show(body: unknown): string {
  if (!validateCallToolResponse(body)) {
    return `not an OXP ${OXP_VERSION} response`;
  }
  const response: CallToolResponse = body;
  return response.success ? JSON.stringify(response.value) : response.error.message;
}

const success = { call_id: "c-1", duration: 5, success: true, value: 3 };
// biome-ignore lint/suspicious/noConsole: the consumer program reports its result on standard output, which the test reads
console.log(JSON.stringify({ tool: request.tool_id, success: show(success), other: show({ nope: 1 }) }));
