// How OXP answers and errors become MCP tool results: values, tool errors with hints, 400/401/422, unreachable servers.
import { OxpAuthenticationError, OxpConnectionError, OxpServerError, OxpValidationError } from "@otc/client";
import { describe, expect, it } from "vitest";
import { ERROR_META_KEY, errorToCallToolResult, toCallToolResult } from "../src/bridge.js";
import { toOxpValue } from "../src/mcp-tools.js";

const text = (result: { content: unknown[] }) => (result.content[0] as { text: string }).text;

describe("OXP answers as MCP results", () => {
  it("wraps a value when its schema is not an object's, and keeps an object as it is", () => {
    expect(toCallToolResult({ success: true, call_id: "c", duration: 1, value: 3 }, true, true)).toEqual({
      content: [{ type: "text", text: "3" }],
      structuredContent: { value: 3 },
    });
    expect(toCallToolResult({ success: true, call_id: "c", duration: 1, value: "hi" }, true, true).content).toEqual([
      { type: "text", text: "hi" },
    ]);
    expect(
      toCallToolResult({ success: true, call_id: "c", duration: 1, value: { a: 1 } }, false, true).structuredContent,
    ).toEqual({
      a: 1,
    });
    expect(
      toCallToolResult({ success: true, call_id: "c", duration: 1, value: null }, true, true).structuredContent,
    ).toEqual({
      value: null,
    });
    expect(
      toCallToolResult({ success: true, call_id: "c", duration: 1, value: null }, false, false).structuredContent,
    ).toBeUndefined();
  });

  it("keeps a tool error's hints in _meta and its prompt content in the text, never the developer message", () => {
    const result = toCallToolResult(
      {
        success: false,
        call_id: "c1",
        duration: 1,
        error: {
          message: "Busy",
          developer_message: "secret detail",
          additional_prompt_content: "Try later.",
          can_retry: true,
          retry_after_ms: 250,
        },
      },
      false,
      true,
    );
    expect(result.isError).toBe(true);
    expect(text(result)).toBe("Busy\n\nTry later.");
    expect(JSON.stringify(result)).not.toContain("secret detail");
    expect(result._meta?.[ERROR_META_KEY]).toEqual({ call_id: "c1", can_retry: true, retry_after_ms: 250 });
  });

  it("lists a 422's parameter errors", () => {
    const result = errorToCallToolResult(
      new OxpValidationError(422, {
        message: "Bad input",
        parameter_errors: { a: "Must be a number", "b.c": "Required" },
      }),
    );
    expect(text(result)).toBe("Invalid input: Bad input\n- a: Must be a number\n- b.c: Required");
    expect(result._meta?.[ERROR_META_KEY]).toMatchObject({ status: 422, parameter_errors: { a: "Must be a number" } });
  });

  it("passes a 400's message, not its developer message; hides a 401's and a connection error's detail", () => {
    const refused = errorToCallToolResult(
      new OxpServerError(400, { message: "Tool 'X.Y' was not found", developer_message: "internal detail" }),
    );
    expect(text(refused)).toBe("Tool 'X.Y' was not found");
    expect(JSON.stringify(refused)).not.toContain("internal detail");
    const unauthenticated = errorToCallToolResult(new OxpAuthenticationError(401, { message: "Bad key k-123" }));
    expect(JSON.stringify(unauthenticated)).not.toContain("k-123");
    const unreachable = errorToCallToolResult(new OxpConnectionError("Could not reach http://user:pw@host:1"));
    expect(JSON.stringify(unreachable)).not.toContain("pw");
    expect(unreachable._meta?.[ERROR_META_KEY]).toMatchObject({ can_retry: true });
    expect(() => errorToCallToolResult(new Error("a bug"))).toThrow("a bug");
  });
});

describe("MCP results as OXP values", () => {
  it("takes structuredContent, else the text (unparsed), else the content blocks", () => {
    expect(toOxpValue({ content: [{ type: "text", text: "{}" }], structuredContent: { a: 1 } })).toEqual({ a: 1 });
    expect(
      toOxpValue({
        content: [
          { type: "text", text: "42" },
          { type: "text", text: "b" },
        ],
      }),
    ).toBe("42\nb");
    const image = { type: "image" as const, data: "AA==", mimeType: "image/png" };
    expect(toOxpValue({ content: [{ type: "text", text: "x" }, image] })).toEqual([{ type: "text", text: "x" }, image]);
    expect(toOxpValue({ content: [] })).toBe("");
  });
});
