// LLM adapters on the demo's catalog: golden outputs, OpenAI strict-mode rules, model calls back to OXP, model text.
import { readFile, writeFile } from "node:fs/promises";
import path from "node:path";
import { fileURLToPath } from "node:url";
import { fromModelToolCall, OxpError, toAnthropicTools, toModelText, toOpenAITools } from "@otc/client";
import type { ToolDefinition } from "@otc/types";
import { describe, expect, it } from "vitest";

const here = path.dirname(fileURLToPath(import.meta.url));
const catalog = JSON.parse(await readFile(path.join(here, "../../../apps/demo/catalog.json"), "utf8")) as {
  items: ToolDefinition[];
};
const tools = catalog.items;

/** Compares with a committed golden file; `UPDATE_GOLDEN=1` rewrites it. */
async function golden(name: string, value: unknown) {
  const file = path.join(here, "../golden", name);
  const text = `${JSON.stringify(value, null, 2)}\n`;
  if (process.env.UPDATE_GOLDEN === "1") {
    await writeFile(file, text);
  }
  expect(text).toBe(await readFile(file, "utf8"));
}

type Schema = Record<string, unknown>;

/** Every object schema inside a schema, the root included. */
function objectSchemas(schema: Schema): Schema[] {
  const found: Schema[] = [];
  const walk = (node: unknown) => {
    if (typeof node !== "object" || node === null) {
      return;
    }
    if (Array.isArray(node)) {
      return node.forEach(walk);
    }
    const record = node as Schema;
    if (record.properties || record.type === "object") {
      found.push(record);
    }
    for (const value of Object.values(record)) {
      walk(value);
    }
  };
  walk(schema);
  return found;
}

describe("golden outputs for the demo catalog", () => {
  it("toOpenAITools", () => golden("openai-tools.json", toOpenAITools(tools)));
  it("toOpenAITools strict", () => golden("openai-tools-strict.json", toOpenAITools(tools, { strict: true })));
  it("toAnthropicTools", () => golden("anthropic-tools.json", toAnthropicTools(tools)));
});

describe("toOpenAITools", () => {
  it("offers one function per tool name, the latest version", () => {
    const names = toOpenAITools(tools).map((tool) => tool.function.name);
    expect(names).toEqual([...new Set(names)]);
    expect(names).toHaveLength(8);
    const hello = toOpenAITools(tools).find((tool) => tool.function.name === "Greeting_Hello");
    expect(hello?.function.parameters.properties).toHaveProperty("language");
  });

  it("in strict mode, requires every property, makes optional ones nullable and forbids others, at every depth", () => {
    for (const tool of toOpenAITools(tools, { strict: true })) {
      expect(tool.function.strict).toBe(true);
      expect(tool.function.parameters.type).toBe("object");
      for (const object of objectSchemas(tool.function.parameters)) {
        expect(object.additionalProperties, tool.function.name).toBe(false);
        expect(object.required).toEqual(Object.keys((object.properties as Schema) ?? {}));
      }
    }
    const strict = (name: string) => {
      const found = toOpenAITools(tools, { strict: true }).find((tool) => tool.function.name === name);
      if (!found) {
        throw new Error(`no tool ${name}`);
      }
      return found.function.parameters.properties as Schema;
    };
    expect(strict("Gmail_GetEmails").query).toEqual({
      type: ["string", "null"],
      description: "Search query for filtering emails.",
    });
    expect(strict("Greeting_Hello").language).toMatchObject({
      type: ["string", "null"],
      enum: ["en", "fr", "es", null],
    });
  });

  it("drops keywords strict mode does not take", () => {
    const sleep = toOpenAITools(tools, { strict: true }).find((tool) => tool.function.name === "System_Sleep");
    expect(JSON.stringify(sleep)).not.toMatch(/"(minimum|maximum|format)"/);
    const timestamp = toOpenAITools(tools, { strict: true }).find(
      (tool) => tool.function.name === "System_GetTimestamp",
    );
    expect(timestamp?.function.parameters).toEqual({
      type: "object",
      properties: {},
      required: [],
      additionalProperties: false,
    });
  });
});

describe("fromModelToolCall", () => {
  it("maps a model call back to the exact tool, dropping the nulls strict mode sent for optional properties", () => {
    expect(fromModelToolCall("Greeting_Hello", '{"name": "Ann", "language": null}', tools)).toEqual({
      tool_id: "Greeting.Hello@2.0.0",
      input: { name: "Ann" },
    });
    expect(fromModelToolCall("Calculator_Add", { a: 1, b: 2 }, tools)).toEqual({
      tool_id: "Calculator.Add@1.0.0",
      input: { a: 1, b: 2 },
    });
  });

  it("without the catalog, turns Toolkit_Tool into Toolkit.Tool", () => {
    expect(fromModelToolCall("Calculator_Add", "")).toEqual({ tool_id: "Calculator.Add", input: {} });
  });

  it.each([
    ["Calculator_Add", "{not json"],
    ["Calculator_Add", "[1, 2]"],
    ["Nope_Nope", "{}"],
  ])("refuses %s with %s", (name, args) => {
    expect(() => fromModelToolCall(name, args, tools)).toThrow(OxpError);
  });
});

describe("toModelText", () => {
  it("renders values, strings as they are", () => {
    expect(toModelText({ call_id: "c", duration: 1, success: true, value: { sum: 3 } })).toBe('{"sum":3}');
    expect(toModelText({ call_id: "c", duration: 1, success: true, value: "Hello, Ann!" })).toBe("Hello, Ann!");
    expect(toModelText({ call_id: "c", duration: 1, success: true, value: null })).toBe("null");
  });

  it("renders a tool error with its prompt content and retry hint, never the developer message", () => {
    const text = toModelText({
      call_id: "c",
      duration: 1,
      success: false,
      error: {
        message: "Doorbell ID not found",
        developer_message: "The doorbell with ID 'x' does not exist.",
        can_retry: true,
        additional_prompt_content: "ids: doorbell42,doorbell84",
        retry_after_ms: 500,
      },
    });
    expect(text).toBe(
      "Error: Doorbell ID not found\n\nids: doorbell42,doorbell84\n\nThe call may be retried after 500 ms.",
    );
    expect(text).not.toContain("does not exist");
  });

  it("says that the same call will not help when the tool says it cannot be retried, and nothing when it is silent", () => {
    const failure = (error: { message: string; can_retry?: boolean }) =>
      toModelText({ call_id: "c", duration: 1, success: false, error });
    expect(failure({ message: "The counter is full", can_retry: false })).toBe(
      "Error: The counter is full\n\nCalling the tool again with the same input will not help.",
    );
    expect(failure({ message: "The counter is full" })).toBe("Error: The counter is full");
  });
});
