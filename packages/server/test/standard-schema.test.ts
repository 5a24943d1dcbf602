// Tools whose input is written with zod 4, valibot or arktype (Standard Schema), on the adapter under test: the JSON
// Schema they are listed with is the library's own, the library validates, and its issues are the protocol's 422.

import { verifies } from "@otc/test-helpers/verifies";
import { toStandardJsonSchema } from "@valibot/to-json-schema";
import { type } from "arktype";
import * as v from "valibot";
import { afterAll, beforeAll, describe, expect, expectTypeOf, it, vi } from "vitest";
import { z } from "zod";
import { createFetchHandler } from "../src/fetch.js";
import {
  defineTool,
  type InputSchema,
  listen,
  type RunningServer,
  type SchemaObject,
  ServerConfigError,
  type Tool,
  type ToolContext,
} from "../src/index.js";
import { callTool, expectSchema, makeServer, send } from "./harness.js";

/** Every library's forecast tool takes the same input: what the tool got is its answer, to show the library's value. */
const forecast = (toolkit: string, inputSchema: InputSchema, inputJsonSchema?: SchemaObject): Tool =>
  defineTool({
    toolkit,
    name: "Forecast",
    version: "1.0.0",
    description: "The weather for a city, a number of days ahead.",
    inputSchema,
    ...(inputJsonSchema ? { inputJsonSchema } : {}),
    outputSchema: {},
    run: (input) => input,
  });

const zodInput = z
  .object({
    city: z.string().min(1).describe("The city."),
    days: z.number().int().min(1).max(7).default(3).describe("How many days ahead, 1 to 7."),
    unit: z.enum(["c", "f"]).optional().describe("Celsius or Fahrenheit."),
  })
  .strict();

const valibotInput = toStandardJsonSchema(
  v.strictObject({
    city: v.pipe(v.string(), v.minLength(1), v.description("The city.")),
    days: v.optional(
      v.pipe(v.number(), v.integer(), v.minValue(1), v.maxValue(7), v.description("How many days ahead, 1 to 7.")),
      3,
    ),
    unit: v.optional(v.pipe(v.picklist(["c", "f"]), v.description("Celsius or Fahrenheit."))),
  }),
);

const arktypeInput = type({
  city: type("string > 0").describe("the city"),
  "days?": type("1 <= number.integer <= 7").describe("how many days ahead, 1 to 7"),
  "unit?": type("'c' | 'f'").describe("Celsius or Fahrenheit"),
}).onUndeclaredKey("reject");

/** A refinement that only settles later: the core waits for the library's answer before it runs the tool. */
const slowlyChecked = z
  .object({ code: z.string().describe("A code the refinement looks up.") })
  .refine(async ({ code }) => {
    await new Promise((resolve) => setImmediate(resolve));
    return code !== "taken";
  }, "Is already taken");

/** A refinement that throws: the tool author's fault, so the call fails as a tool's would, never as a 5xx. */
const throwingCheck = z.object({ n: z.number().describe("Any number.") }).refine(() => {
  throw new Error("the refinement broke");
});

/** A refinement that never settles: the call must not wait past the tool's time limit. */
const neverChecked = z
  .object({ n: z.number().describe("Any number.") })
  .refine(() => new Promise<boolean>(() => {}), "Never says");

let running: RunningServer;
let baseUrl: string;
let ran = 0;
beforeAll(async () => {
  const tools = [
    forecast("Zod", zodInput),
    forecast("Valibot", valibotInput),
    forecast("Arktype", arktypeInput),
    defineTool({
      toolkit: "Zod",
      name: "Claim",
      version: "1.0.0",
      description: "Claims a code.",
      inputSchema: slowlyChecked,
      outputSchema: { type: "string" },
      run: ({ code }) => `claimed ${code}`,
    }),
    defineTool({
      toolkit: "Zod",
      name: "Stuck",
      version: "1.0.0",
      description: "Its input check never ends.",
      inputSchema: neverChecked,
      outputSchema: null,
      timeoutMs: 150,
      run: () => {
        ran++;
      },
    }),
    defineTool({
      toolkit: "Zod",
      name: "Vouch",
      version: "1.0.0",
      description: "Its refinement quotes the input in its message.",
      inputSchema: z.object({ note: z.string().describe("A note.") }).refine(({ note }) => note.length < 10, {
        error: (issue) => `The note ${(issue.input as { note: string }).note} is too long`,
      }),
      outputSchema: null,
      run: () => null,
    }),
    defineTool({
      toolkit: "Valibot",
      name: "Subscribe",
      version: "1.0.0",
      description: "Subscribes an address.",
      inputSchema: toStandardJsonSchema(
        v.object({ email: v.pipe(v.string(), v.email(), v.description("The address.")) }),
      ),
      outputSchema: null,
      run: () => null,
    }),
    defineTool({
      toolkit: "Zod",
      name: "Broken",
      version: "1.0.0",
      description: "Its input check throws.",
      inputSchema: throwingCheck,
      outputSchema: null,
      run: () => {
        ran++;
      },
    }),
  ];
  running = await listen(makeServer({ tools, logger: false, validateResponses: true }), { port: 0 });
  baseUrl = running.url;
});
afterAll(() => running.close());

const LIBRARIES = [["Zod"], ["Valibot"], ["Arktype"]] as const;

describe.each(LIBRARIES)("%s", (toolkit) => {
  it("is listed with the library's JSON Schema, draft 2020-12, without its $schema", async () => {
    const reply = await send(`${baseUrl}/tools`);
    expect(reply.status).toBe(200);
    expectSchema("ToolListResponse", reply.body);
    const listed = (reply.body.items as { id: string; input_schema: Record<string, unknown> }[]).find(
      (tool) => tool.id === `${toolkit}.Forecast@1.0.0`,
    );
    const schema = listed?.input_schema;
    expect(schema).not.toHaveProperty("$schema");
    expect(schema).toMatchObject({
      type: "object",
      properties: {
        city: { type: "string", description: expect.stringMatching(/^the city\.?$/i) },
        days: { type: "integer", minimum: 1, maximum: 7 },
      },
      required: ["city"],
      additionalProperties: false,
    });
  });

  it("runs with the library's value: a default filled in", async () => {
    const reply = await callTool(baseUrl, { tool_id: `${toolkit}.Forecast`, input: { city: "Oslo", unit: "c" } });
    expect(reply.status, reply.text).toBe(200);
    // arktype has no defaults: what was sent.
    const days = toolkit === "Arktype" ? {} : { days: 3 };
    expect(reply.body).toMatchObject({ success: true, value: { city: "Oslo", unit: "c", ...days } });
  });

  verifies(
    "call.input-422",
    "answers a wrong input with a 422 whose parameter_errors read as for a JSON Schema tool",
    async () => {
      const reply = await callTool(baseUrl, {
        tool_id: `${toolkit}.Forecast`,
        input: { days: "3", unit: "k", extra: true },
      });
      expect(reply.status, reply.text).toBe(422);
      expectSchema("ValidationErrorResponse", reply.body);
      expect(reply.body).toEqual({
        message: "Some input parameters are invalid",
        parameter_errors: {
          city: "Is required",
          days: "Must be a number",
          unit: 'Must be one of: "c", "f"',
          extra: "Is not an allowed property",
        },
      });
    },
  );

  it("keeps the library's own words for a rule Ajv has no sentence for, never quoting the value sent", async () => {
    const reply = await callTool(baseUrl, { tool_id: `${toolkit}.Forecast`, input: { city: "Oslo", days: 9 } });
    expect(reply.status, reply.text).toBe(422);
    const message = (reply.body.parameter_errors as Record<string, string>).days;
    expect(Object.keys(reply.body.parameter_errors as object)).toEqual(["days"]);
    expect(message).toMatch(/^[A-Z]/);
    expect(message).toMatch(/7/);
    expect(message).not.toMatch(/9/);
  });
});

describe("the library's checks", () => {
  it("waits for an asynchronous refinement before running the tool, and answers its issue as a 422", async () => {
    const ok = await callTool(baseUrl, { tool_id: "Zod.Claim", input: { code: "free" } });
    expect(ok.body).toMatchObject({ success: true, value: "claimed free" });
    const taken = await callTool(baseUrl, { tool_id: "Zod.Claim", input: { code: "taken" } });
    expect(taken.status, taken.text).toBe(422);
    expect(taken.body.parameter_errors).toEqual({ input: "Is already taken" });
  });

  it("fails the call as the tool's own failure when the library throws, without running the tool", async () => {
    const reply = await callTool(baseUrl, { tool_id: "Zod.Broken", input: { n: 1 } });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toMatchObject({
      success: false,
      error: { message: "The tool failed to run", developer_message: "Error: the refinement broke", can_retry: false },
    });
    expect(ran).toBe(0);
  });

  it("fails the call as a tool past its time limit when the library's check never ends, without running it", async () => {
    const started = performance.now();
    const reply = await callTool(baseUrl, { tool_id: "Zod.Stuck", input: { n: 1 } });
    expect(reply.status, reply.text).toBe(200);
    expect(reply.body).toMatchObject({ success: false, error: { can_retry: true } });
    expect(performance.now() - started).toBeLessThan(5_000);
    expect(ran).toBe(0);
  });

  it.each([
    ["Valibot.Subscribe", { email: `${"x".repeat(100_000)}@` }, "email"],
    ["Zod.Vouch", { note: "y".repeat(100_000) }, "input"],
  ])("never repeats a long value sent in %s's 422, and keeps its message short", async (toolId, input, key) => {
    const reply = await callTool(baseUrl, { tool_id: toolId, input });
    expect(reply.status, reply.text).toBe(422);
    const message = (reply.body.parameter_errors as Record<string, string>)[key] ?? "";
    expect(message).toMatch(/^[A-Z]/);
    expect(message.length).toBeLessThan(300);
    expect(message).not.toMatch(/x{300}|y{300}/);
  });

  it("replays a call_id by the input as sent, not the library's value", async () => {
    const body = { tool_id: "Zod.Forecast", call_id: "std-replay-1", input: { city: "Rome" } };
    const first = await callTool(baseUrl, body);
    const again = await callTool(baseUrl, body);
    expect(again.body).toEqual(first.body);
    const other = await callTool(baseUrl, { ...body, input: { city: "Rome", days: 3 } });
    expect(other.status, other.text).toBe(400);
  });
});

describe("start-up (docs/protocol.md 6)", () => {
  const refusal = (inputSchema: InputSchema, inputJsonSchema?: SchemaObject) => {
    try {
      createFetchHandler({ tools: [forecast("Lib", inputSchema, inputJsonSchema)] });
    } catch (error) {
      expect(error).toBeInstanceOf(ServerConfigError);
      return (error as Error).message;
    }
    throw new Error("the tool was accepted");
  };

  verifies.each([
    ["zod", z.object({ city: z.string() }), /Lib\.Forecast@1\.0\.0.*"city" has none: in zod, add \.describe/],
    [
      "valibot",
      toStandardJsonSchema(v.object({ city: v.string() })),
      /Lib\.Forecast@1\.0\.0.*"city" has none: in valibot, pipe the property through v\.description/,
    ],
    ["arktype", type({ city: "string" }), /Lib\.Forecast@1\.0\.0.*"city" has none: in arktype, add \.describe/],
  ])(
    "definitions.input-schema-flat",
    "refuses a %s schema whose top-level property has no description, saying how to give one",
    (_library, schema, message) => {
      expect(refusal(schema)).toMatch(message);
    },
  );

  type Node = { name: string; children: Node[] };
  const zodTree: z.ZodType<Node> = z.object({
    name: z.string(),
    get children() {
      return z.array(zodTree);
    },
  });

  verifies(
    "definitions.self-contained",
    "refuses a recursive schema, whose JSON Schema needs $ref, saying why the library wrote one",
    () => {
      expect(refusal(z.object({ root: zodTree.describe("The tree.") }))).toMatch(
        /Lib\.Forecast@1\.0\.0.*must be self-contained, but has .*\$ref.*zod writes \$ref and \$defs for a recursive schema/,
      );
    },
  );

  it("refuses inputJsonSchema beside a JSON Schema inputSchema, which is listed as it is", () => {
    expect(() =>
      defineTool({
        toolkit: "Lib",
        name: "Plain",
        version: "1.0.0",
        description: "d",
        inputSchema: { type: "object" },
        inputJsonSchema: { type: "object" },
        outputSchema: null,
        run: () => null,
      }),
    ).toThrow(/Lib\.Plain@1\.0\.0.*inputJsonSchema goes with a Standard Schema/);
  });

  it("names the rule, not a library's way around it, when the inputJsonSchema its author wrote breaks it", () => {
    const message = refusal(z.object({ city: z.string() }), {
      type: "object",
      properties: { city: { type: "string" } },
    });
    expect(message).toMatch(/Lib\.Forecast@1\.0\.0.*description/);
    expect(message).not.toMatch(/in zod/);
  });

  it("refuses a valibot schema without its JSON Schema converter, saying to wrap it", () => {
    expect(refusal(v.object({ city: v.pipe(v.string(), v.description("The city.")) }))).toMatch(
      /Lib\.Forecast@1\.0\.0.*no Standard JSON Schema converter.*toStandardJsonSchema/,
    );
  });

  it("refuses a schema the library cannot write as JSON Schema, naming the tool", () => {
    expect(refusal(z.object({ when: z.date().describe("A date.") }))).toMatch(
      /Lib\.Forecast@1\.0\.0.*cannot be written as JSON Schema/,
    );
  });

  it("accepts a format only the library knows (zod's cuid): the library checks it", async () => {
    const tool = forecast("Lib", z.object({ id: z.cuid().describe("A cuid.") }));
    const warn = vi.spyOn(console, "warn");
    const handler = createFetchHandler({ tools: [tool], logger: false });
    // Ajv warns of a format it does not know on the console: the schema compiled as a check has none.
    expect(warn).not.toHaveBeenCalled();
    warn.mockRestore();
    const call = await handler(
      new Request("http://127.0.0.1/tools/call", {
        method: "POST",
        headers: { "content-type": "application/json" },
        body: JSON.stringify({ tool_id: "Lib.Forecast", input: { id: "not a cuid!" } }),
      }),
    );
    expect(call.status).toBe(422);
    expect(await call.json()).toMatchObject({ parameter_errors: { id: expect.stringMatching(/cuid/i) } });
  });

  it("lists inputJsonSchema instead of the converter's, while the library still validates", async () => {
    const tool = defineTool({
      toolkit: "Lib",
      name: "Echo",
      version: "1.0.0",
      description: "Echoes a word.",
      inputSchema: v.object({ word: v.string() }),
      inputJsonSchema: {
        type: "object",
        properties: { word: { type: "string", description: "The word." } },
        required: ["word"],
      },
      outputSchema: { type: "string" },
      run: ({ word }) => word,
    });
    const handler = createFetchHandler({ tools: [tool], logger: false });
    const listed = await handler(new Request("http://127.0.0.1/tools"));
    expect(((await listed.json()) as { items: { input_schema: unknown }[] }).items[0]?.input_schema).toEqual(
      tool.inputSchema,
    );
    const call = (input: unknown) =>
      handler(
        new Request("http://127.0.0.1/tools/call", {
          method: "POST",
          headers: { "content-type": "application/json" },
          body: JSON.stringify({ tool_id: "Lib.Echo", input }),
        }),
      );
    expect(await (await call({ word: "hi" })).json()).toMatchObject({ success: true, value: "hi" });
    const wrong = await call({ word: 1 });
    expect(wrong.status).toBe(422);
    expect(await wrong.json()).toMatchObject({ parameter_errors: { word: "Must be a string" } });
  });
});

describe("types", () => {
  it("types the run function's input as the library's output", () => {
    defineTool({
      toolkit: "T",
      name: "Zod",
      version: "1.0.0",
      description: "d",
      inputSchema: zodInput,
      outputSchema: null,
      run: (input, ctx) => {
        expectTypeOf(input).toEqualTypeOf<{ city: string; days: number; unit?: "c" | "f" | undefined }>();
        expectTypeOf(ctx).toEqualTypeOf<ToolContext>();
      },
    });
    defineTool({
      toolkit: "T",
      name: "Valibot",
      version: "1.0.0",
      description: "d",
      inputSchema: valibotInput,
      outputSchema: null,
      run: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ city: string; days: number; unit?: "c" | "f" | undefined }>();
      },
    });
    defineTool({
      toolkit: "T",
      name: "Arktype",
      version: "1.0.0",
      description: "d",
      inputSchema: arktypeInput,
      outputSchema: null,
      run: (input) => {
        expectTypeOf(input).toEqualTypeOf<{ city: string; days?: number; unit?: "c" | "f" }>();
      },
    });
    defineTool({
      toolkit: "T",
      name: "Json",
      version: "1.0.0",
      description: "d",
      inputSchema: { type: "object", properties: { a: { type: "number", description: "A." } }, required: ["a"] },
      outputSchema: null,
      run: (input) => {
        // Plain JSON Schema tools keep their inferred types.
        expectTypeOf(input.a).toEqualTypeOf<number>();
      },
    });
  });
});
