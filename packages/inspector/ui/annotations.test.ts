import type { ToolDefinition } from "@otc/types";
import { describe, expect, it } from "vitest";
import { deprecationOf, hintsOf, isDestructive, needsConfirmation, titleOf } from "./annotations.js";

const tool = (fields: Record<string, unknown>) => ({ id: "A.B@1.0.0", ...fields }) as unknown as ToolDefinition;

describe("a tool's annotations", () => {
  it.each([
    ["no annotations: destructive by default", undefined, true],
    ["empty annotations", {}, true],
    ["read-only", { read_only: true }, false],
    ["read-only, whatever destructive says", { read_only: true, destructive: true }, false],
    ["not read-only, destructive unsaid", { read_only: false }, true],
    ["only adds", { read_only: false, destructive: false }, false],
    ["destructive", { destructive: true }, true],
    ["a hint that is not a boolean takes the default", { read_only: "yes", destructive: "no" }, true],
    ["annotations that are not an object", ["read_only"], true],
  ])("%s", (_name, annotations, destructive) => {
    expect(isDestructive(tool({ annotations }))).toBe(destructive);
    // Only a server that applied the annotations extension described the tool at all.
    expect(needsConfirmation(tool({ annotations }), true)).toBe(destructive);
    expect(needsConfirmation(tool({ annotations }), false)).toBe(false);
  });

  it("says which hints the tool stated and which are defaults", () => {
    expect(hintsOf(tool({ annotations: { idempotent: true } }))).toEqual({
      readOnly: { value: false, stated: false },
      destructive: { value: true, stated: false },
      idempotent: { value: true, stated: true },
      openWorld: { value: true, stated: false },
    });
  });

  it("reads a title and a deprecation message only when they are non-empty strings", () => {
    expect(titleOf(tool({ annotations: { title: "Add" } }))).toBe("Add");
    expect(titleOf(tool({ annotations: { title: "" } }))).toBeUndefined();
    expect(titleOf(tool({ annotations: { title: 7 } }))).toBeUndefined();
    expect(deprecationOf(tool({ deprecation_message: "Use B." }))).toBe("Use B.");
    expect(deprecationOf(tool({ deprecation_message: {} }))).toBeUndefined();
  });
});
