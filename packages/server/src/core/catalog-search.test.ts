// CatalogSearch's `ids` answer as text: the same bytes as the definitions stringified, in every list form, made once.
import { describe, expect, it } from "vitest";
import { WireError } from "./errors.js";
import { OxpCore } from "./oxp-core.js";
import { defineTool } from "./tool.js";

const tool = (name: string, version: string, extra: Record<string, unknown> = {}) =>
  defineTool({
    toolkit: "Kit",
    name,
    version,
    description: `The ${name} tool, "quoted" and accented: é.`,
    inputSchema: {
      type: "object",
      properties: { text: { type: "string", description: "What to use." } },
      required: ["text"],
      additionalProperties: false,
    },
    outputSchema: { type: "string" },
    run: () => "done",
    ...extra,
  });

const core = new OxpCore({
  tools: [
    tool("Read", "1.0.0", { annotations: { read_only: true }, requiredScopes: ["kit:read"] }),
    tool("Read", "2.0.0", { requiredScopes: ["kit:read"] }),
    tool("Write", "1.0.0", { deprecationMessage: "Use Kit.Read." }),
  ],
});
const search = core.catalog.search();
const forms = [{}, { annotations: true }, { scopes: true }, { annotations: true, scopes: true }];

describe("CatalogSearch.byIdsText", () => {
  it.each(forms)("answers the bytes of the definitions stringified, in the form %j, each time", (form) => {
    const scope = { form, catalogTag: '"tag"' };
    for (const ids of [
      "Kit.Read",
      "Kit.Write@1.0.0,Kit.Read@1.0.0",
      "Kit.Read@2.0.0, Kit.Read , Kit.Write",
      "Kit.Write",
    ]) {
      const expected = JSON.stringify(search.byIds(ids, scope));
      expect(search.byIdsText(ids, scope), ids).toBe(expected);
      // Made from the texts kept the first time: still the same bytes.
      expect(search.byIdsText(ids, scope), ids).toBe(expected);
    }
  });

  it("refuses what byIds refuses, with the same error", () => {
    const scope = { form: {}, catalogTag: '"tag"' };
    const refusal = (run: () => unknown) => {
      try {
        run();
      } catch (error) {
        return error instanceof WireError ? [error.status, error.message, error.details.developerMessage] : error;
      }
      return undefined;
    };
    for (const ids of [
      "Kit.Nope",
      "",
      "Kit.Read,Other.Tool",
      Array.from({ length: 101 }, () => "Kit.Read").join(","),
    ]) {
      const expected = refusal(() => search.byIds(ids, scope));
      expect(expected, ids).toBeDefined();
      expect(
        refusal(() => search.byIdsText(ids, scope)),
        ids,
      ).toEqual(expected);
    }
  });

  it("leaves out the tools a caller may not see, as byIds does", () => {
    const scope = { form: { scopes: true }, catalogTag: '"tag"', visible: new Set(["Kit.Write@1.0.0"]) };
    expect(search.byIdsText("Kit.Write", scope)).toBe(JSON.stringify(search.byIds("Kit.Write", scope)));
    expect(() => search.byIdsText("Kit.Read", scope)).toThrow(WireError);
  });
});
