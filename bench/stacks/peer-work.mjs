/** The work a peer does per request, the same in every peer: check the request and the tool input with precompiled Ajv, run the tool. */
import { randomUUID } from "node:crypto";
import { Ajv } from "ajv";
import { callRequestSchema, inputErrors, peerToolList, peerTools, runPeerTool } from "./catalog.mjs";

/**
 * A peer's handlers for its config's catalog. `checkRequest` false when the framework already checked the body against a
 * schema of its own (Fastify, express-openapi-validator).
 */
export function peerWork(config, { checkRequest = true } = {}) {
  const list = peerToolList(config);
  const ajv = new Ajv({ allErrors: false });
  const validateRequest = ajv.compile(callRequestSchema);
  const tools = peerTools(list);
  const inputValidators = new Map(
    [...new Set(tools.values())].map((tool) => [tool, ajv.compile(tool.definition.input_schema)]),
  );
  return {
    /** The GET /tools body. */
    list: () => list,
    /** A POST /tools/call answer for a parsed body: `{ status, body }`. */
    async call(body) {
      if (checkRequest && !validateRequest(body)) {
        return { status: 400, body: { message: "The request does not match the schema" } };
      }
      const tool = tools.get(body.tool_id);
      if (!tool) {
        return { status: 404, body: { message: "No such tool" } };
      }
      const input = body.input ?? {};
      const validateInput = inputValidators.get(tool);
      if (!validateInput(input)) {
        return { status: 422, body: inputErrors(validateInput.errors) };
      }
      return { status: 200, body: await runPeerTool(tool, input, body.call_id ?? randomUUID()) };
    },
  };
}
