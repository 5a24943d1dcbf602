/** Scenarios for docs/protocol.md section 3: calling tools, versions, input errors, tool errors, idempotency, envelope. */
import { randomUUID } from "node:crypto";
import { compareToolVersions, formatToolId, parseToolId, type ToolDefinition } from "@otc/types";
import { header } from "../http.js";
import { minimalObject, wrongTypeFor } from "../inputs.js";
import {
  type Context,
  call,
  callOk,
  check,
  checkError,
  checkSchema,
  checkStatus,
  need,
  type Scenario,
  truncate,
} from "../scenario.js";

const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/i;

/** A tool without requirements whose input has a required property: input errors reach it, nothing runs. */
export function probeTool(ctx: Context): ToolDefinition {
  const tool = ctx.tools.find((candidate) => {
    const schema = candidate.input_schema as Record<string, unknown>;
    return (
      !candidate.requirements && Array.isArray(schema.required) && schema.required.length > 0 && wrongTypeFor(schema)
    );
  });
  return need(tool, "no tool without requirements has a required input property");
}

const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);

export const callScenarios: Scenario[] = [
  {
    id: "call.success",
    section: "3.5",
    rules: ["response.call-id-and-duration", "response.exactly-one-outcome"],
    level: "MUST",
    title: "A call answers 200 with success, value, a numeric duration and the request's call_id",
    async run(ctx) {
      const safe = need(ctx.fixture.safeCall, "the fixture names no safe call");
      const callId = `oxp-conformance-${randomUUID()}`;
      const response = await callOk(ctx, { tool_id: safe.tool_id, call_id: callId, input: safe.input });
      check(response.success === true, `the call failed: ${truncate(JSON.stringify(response.error))}`);
      check(
        same(response.value, safe.value),
        `value ${truncate(JSON.stringify(response.value))}, expected ${JSON.stringify(safe.value)}`,
      );
      check(response.call_id === callId, `call_id ${response.call_id}, expected ${callId}`);
      check(typeof response.duration === "number", "duration is not a number");
    },
  },
  {
    id: "call.call-id.generated",
    section: "3.5",
    rules: ["response.call-id-and-duration"],
    level: "MUST",
    title: "Without a call_id the server makes one (a UUID v4)",
    async run(ctx) {
      const safe = need(ctx.fixture.safeCall, "the fixture names no safe call");
      const response = await callOk(ctx, { tool_id: safe.tool_id, input: safe.input });
      check(UUID_V4.test(response.call_id), `call_id '${response.call_id}' is not a UUID v4`);
    },
  },
  {
    id: "call.null-output",
    section: "3.5",
    rules: ["response.exactly-one-outcome", "definitions.output-schema"],
    level: "project",
    title: "A tool with output_schema null answers value: null",
    async run(ctx) {
      const fixture = need(ctx.fixture.nullOutput, "the fixture names no tool without output");
      const response = await callOk(ctx, { tool_id: fixture.tool_id, input: fixture.input });
      check(
        response.success && response.value === null,
        `expected success with value null, got ${truncate(JSON.stringify(response))}`,
      );
    },
  },
  {
    id: "call.unknown-tool",
    section: "3.3",
    rules: ["call.unknown-tool-400"],
    level: "MUST",
    title: "An unknown tool is a 400 ServerErrorResponse",
    async run(ctx) {
      checkError(await call(ctx, { tool_id: "OxpConformance.NoSuchTool" }), 400);
    },
  },
  {
    id: "call.version.unknown",
    section: "3.4",
    rules: ["call.unknown-tool-400"],
    level: "MUST",
    title: "A version that does not exist is a 400 naming what was asked and what exists",
    async run(ctx) {
      const tool = need(ctx.tools[0], "the server lists no tools");
      const id = need(parseToolId(tool.id), `the server's first tool has no valid id: ${truncate(tool.id)}`);
      const answer = await call(ctx, { tool_id: formatToolId({ ...id, version: "987654.0.0" }) });
      checkError(answer, 400);
      const body = answer.json as { developer_message?: string };
      check(
        (body.developer_message ?? "").includes("987654"),
        `developer_message does not say which version was asked: ${body.developer_message ?? "(none)"}`,
      );
    },
  },
  {
    id: "call.version.pattern",
    section: "3.4",
    rules: ["tool-id.pattern"],
    level: "MUST",
    title: "A tool id that breaks the pattern is a 400",
    async run(ctx) {
      for (const toolId of ["NoDot", "A.B@1.0", "A.B@latest", "A-B.C", "A.B.C", `A.${"B".repeat(10_000)}@1.0.0.0`]) {
        checkError(await call(ctx, { tool_id: toolId }), 400);
      }
    },
  },
  ...(
    [
      { kind: "exact", rules: ["tool-id.exact-version"] },
      { kind: "shorthand", rules: ["tool-id.major-shorthand"] },
      { kind: "latest", rules: ["tool-id.latest"] },
    ] as const
  ).map(
    ({ kind, rules }): Scenario => ({
      id: `call.version.${kind}`,
      section: "3.4",
      rules,
      level: "MUST",
      title:
        kind === "exact"
          ? "Tool@x.y.z runs exactly that version"
          : kind === "shorthand"
            ? "Tool@x runs exactly x.0.0"
            : "Tool without a version runs the highest version (numeric order)",
      async run(ctx) {
        const versions = need(ctx.fixture.versions, "the fixture names no tool with several versions");
        const listed = Object.keys(versions.values).sort(compareToolVersions);
        const cases: [string, string][] =
          kind === "exact"
            ? listed.map((version) => [`${versions.tool}@${version}`, version])
            : kind === "shorthand"
              ? listed
                  .filter((version) => version.endsWith(".0.0"))
                  .map((version) => [`${versions.tool}@${version.split(".")[0]}`, version])
              : [[versions.tool, listed.at(-1) as string]];
        check(cases.length > 0, "the fixture lists no version this check can use");
        for (const [toolId, version] of cases) {
          const response = await callOk(ctx, { tool_id: toolId, input: versions.input });
          check(
            same(response.value, versions.values[version]),
            `${toolId} answered ${truncate(JSON.stringify(response.value))}, which is not version ${version}'s value`,
          );
        }
      },
    }),
  ),
  {
    id: "call.input.invalid",
    section: "3.3",
    rules: ["call.input-422"],
    level: "MUST",
    title: "Input that breaks input_schema is a 422 with parameter_errors keyed by property",
    async run(ctx) {
      const tool = probeTool(ctx);
      const wrong = wrongTypeFor(tool.input_schema as Record<string, unknown>);
      if (!wrong) {
        throw new Error("unreachable");
      }
      const answer = await call(ctx, {
        tool_id: tool.id,
        input: { ...minimalObject(tool.input_schema as Record<string, unknown>), [wrong.name]: wrong.value },
      });
      checkError(answer, 422);
      const errors = (answer.json as { parameter_errors?: Record<string, string> }).parameter_errors ?? {};
      check(wrong.name in errors, `parameter_errors does not name '${wrong.name}': ${JSON.stringify(errors)}`);
    },
  },
  {
    id: "call.input.missing",
    section: "3.3",
    rules: ["call.input-422"],
    level: "MUST",
    title: "A missing required property is a 422 keyed by its own name",
    async run(ctx) {
      const tool = probeTool(ctx);
      const required = (tool.input_schema as { required: string[] }).required;
      const answer = await call(ctx, { tool_id: tool.id, input: {} });
      checkError(answer, 422);
      const errors = (answer.json as { parameter_errors?: Record<string, string> }).parameter_errors ?? {};
      for (const name of required) {
        check(name in errors, `parameter_errors does not name the missing '${name}': ${JSON.stringify(errors)}`);
      }
    },
  },
  {
    id: "call.input.no-coercion",
    section: "3.3",
    rules: ["call.input-422"],
    level: "project",
    title: 'Types are not coerced: "5" is not a number',
    async run(ctx) {
      const tool = need(
        ctx.tools.find((candidate) => {
          const wrong = !candidate.requirements && wrongTypeFor(candidate.input_schema as Record<string, unknown>);
          return wrong && wrong.value === "5";
        }),
        "no tool without requirements has a required number",
      );
      const wrong = wrongTypeFor(tool.input_schema as Record<string, unknown>);
      const input = { ...minimalObject(tool.input_schema as Record<string, unknown>), [wrong?.name ?? ""]: "5" };
      checkError(await call(ctx, { tool_id: tool.id, input }), 422);
    },
  },
  {
    id: "call.request.extra-field",
    section: "3.1",
    rules: ["request.no-extra-properties"],
    level: "MUST",
    title: "An unknown top-level field in the request is a 400",
    async run(ctx) {
      const tool = need(ctx.tools[0], "the server lists no tools");
      checkError(await call(ctx, { tool_id: tool.id, inputs: {} }), 400);
    },
  },
  {
    id: "call.order.tool-before-input",
    section: "3.3",
    rules: ["call.order-of-checks"],
    level: "project",
    title: "The tool is resolved before the input is checked (unknown tool with bad input: 400)",
    async run(ctx) {
      checkError(await call(ctx, { tool_id: "OxpConformance.NoSuchTool", input: { anything: ["at", "all"] } }), 400);
    },
  },
  {
    id: "call.tool-error",
    section: "3.6",
    rules: ["tool-failure.always-200", "tool-failure.tool-error-passthrough"],
    level: "MUST",
    title: "A tool's own error is a 200 with success: false and its fields",
    async run(ctx) {
      const fixture = need(ctx.fixture.toolError, "the fixture names no failing call");
      const response = await callOk(ctx, { tool_id: fixture.tool_id, input: fixture.input });
      check(response.success === false, "the call succeeded");
      for (const [key, value] of Object.entries(fixture.error)) {
        check(
          same(response.error?.[key], value),
          `error.${key} is ${JSON.stringify(response.error?.[key])}, expected ${JSON.stringify(value)}`,
        );
      }
    },
  },
  {
    id: "call.timeout",
    section: "3.6",
    rules: ["tool-failure.timeout"],
    level: "project",
    title: "A tool past its time limit is a 200 with success: false and can_retry: true",
    async run(ctx) {
      const fixture = need(ctx.fixture.timeout, "the fixture names no call that times out");
      const answer = await ctx.http.send({
        method: "POST",
        path: "/tools/call",
        headers: { "content-type": "application/json" },
        body: { tool_id: fixture.tool_id, input: fixture.input },
        timeoutMs: fixture.maxWaitMs,
      });
      checkStatus(answer, 200);
      const response = answer.json as { success?: boolean; error?: { can_retry?: boolean } };
      check(
        response.success === false && response.error?.can_retry === true,
        `expected a retryable failure, got ${truncate(answer.text)}`,
      );
    },
  },
  {
    id: "call.idempotency.replay",
    section: "3.7",
    rules: ["idempotency.replay"],
    level: "project",
    title: "The same call_id and call is answered with the stored response (the tool does not run again)",
    async run(ctx) {
      const fixture = need(ctx.fixture.idempotent, "the fixture names no idempotency probe");
      const body = { tool_id: fixture.tool_id, call_id: `oxp-conformance-${randomUUID()}`, input: fixture.input };
      const first = await callOk(ctx, body);
      const second = await callOk(ctx, body);
      check(
        same(first, second),
        `the repeat answered differently: ${truncate(JSON.stringify(first))} then ${truncate(JSON.stringify(second))}`,
      );
    },
  },
  {
    id: "call.idempotency.concurrent",
    section: "3.7",
    rules: ["idempotency.concurrent-duplicate-waits"],
    level: "project",
    title: "Duplicates sent at once all get the one response",
    async run(ctx) {
      const fixture = need(ctx.fixture.idempotent, "the fixture names no idempotency probe");
      const body = { tool_id: fixture.tool_id, call_id: `oxp-conformance-${randomUUID()}`, input: fixture.input };
      const answers = await Promise.all(Array.from({ length: 6 }, () => call(ctx, body)));
      for (const answer of answers) {
        checkStatus(answer, 200);
      }
      check(new Set(answers.map((answer) => answer.text)).size === 1, "the duplicates got different responses");
    },
  },
  {
    id: "call.idempotency.conflict",
    section: "3.7",
    rules: ["idempotency.mismatch-400"],
    level: "project",
    title: "The same call_id with another input is a 400",
    async run(ctx) {
      const fixture = need(ctx.fixture.safeCall, "the fixture names no safe call");
      const callId = `oxp-conformance-${randomUUID()}`;
      await callOk(ctx, { tool_id: fixture.tool_id, call_id: callId, input: fixture.input });
      const other = Object.fromEntries(
        Object.entries(fixture.input).map(([key, value]) => [key, typeof value === "number" ? value + 1 : value]),
      );
      check(!same(other, fixture.input), "the fixture's safe call has no number to change");
      checkError(await call(ctx, { tool_id: fixture.tool_id, call_id: callId, input: other }), 400);
    },
  },
  {
    id: "call.envelope",
    section: "3.2",
    rules: ["envelope.accept", "envelope.answer-in-kind"],
    level: "MUST",
    title: "The draft envelope {$schema, request} is answered in the envelope {$schema, result}",
    async run(ctx) {
      const safe = need(ctx.fixture.safeCall, "the fixture names no safe call");
      for (const schema of ["urn:oxp:1.0", "otc://1.0", "https://example.com/spec/http/1.0/openapi.json"]) {
        const answer = await call(ctx, { $schema: schema, request: { tool_id: safe.tool_id, input: safe.input } });
        checkStatus(answer, 200);
        checkSchema("CallToolResultEnvelope", answer.json, `envelope with $schema ${schema}`);
      }
    },
  },
  {
    id: "call.envelope.errors",
    section: "3.2",
    rules: ["envelope.errors-unwrapped", "versions.envelope-schema"],
    level: "MUST",
    title: "Envelope errors have the flat form's bodies; an unsupported $schema is a 400",
    async run(ctx) {
      checkError(await call(ctx, { request: { tool_id: "OxpConformance.NoSuchTool" } }), 400);
      const unsupported = await call(ctx, { $schema: "otc://2.0", request: { tool_id: "OxpConformance.NoSuchTool" } });
      checkError(unsupported, 400);
      check(
        /version/i.test((unsupported.json as { message: string }).message),
        "the 400 does not speak of the version",
      );
      check(header(unsupported, "oxp-version") === "1.0", "no OXP-Version on the 400");
    },
  },
];
