// Unit tests of the spec bundler: naming, ref rewriting, dereferencing and the errors it raises.
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import os from "node:os";
import path from "node:path";
import { describe, expect, it } from "vitest";
import { dereference, type JsonObject, type LoadedSpec, SchemaNames, SpecError, toComponentsForm } from "./bundle.js";
import { findDrift } from "./cli.js";

const schemaFile = (file: string, schema: JsonObject) => ({
  file,
  title: String(schema.title),
  schema: { $id: `https://example.test/${file}`, ...schema },
});

const spec = (schemas: LoadedSpec["schemas"], componentSchemas: JsonObject = {}): LoadedSpec => ({
  dir: "/nowhere",
  openapi: {
    openapi: "3.1.0",
    info: { title: "t", version: "1" },
    paths: {},
    components: { schemas: componentSchemas },
  },
  schemas,
});

describe("toComponentsForm", () => {
  it("puts files and their $defs under their titles and rewrites every ref", () => {
    const form = toComponentsForm(
      spec(
        [
          schemaFile("a.json", {
            title: "A",
            $schema: "https://json-schema.org/draft/2020-12/schema",
            properties: { b: { $ref: "b.json" }, c: { $ref: "#/$defs/C" } },
            $defs: { C: { title: "TheC", type: "string" } },
          }),
          schemaFile("b.json", { title: "B", type: "number" }),
        ],
        { A: { $ref: "./schemas/a.json" } },
      ),
    );
    expect((form.components as JsonObject).schemas).toEqual({
      A: {
        title: "A",
        properties: { b: { $ref: "#/components/schemas/B" }, c: { $ref: "#/components/schemas/TheC" } },
      },
      B: { title: "B", type: "number" },
      TheC: { title: "TheC", type: "string" },
    });
  });

  it("refuses a component whose name differs from its file's title", () => {
    const bad = spec([schemaFile("a.json", { title: "A" })], { Alpha: { $ref: "./schemas/a.json" } });
    expect(() => toComponentsForm(bad)).toThrow(/components\/schemas\/Alpha points to schemas\/a.json, titled "A"/);
  });

  it("refuses two schemas with the same name", () => {
    const twice = [
      schemaFile("a.json", { title: "A", $defs: { X: { title: "B" } } }),
      schemaFile("b.json", { title: "B" }),
    ];
    expect(() => new SchemaNames(twice)).toThrow(SpecError);
  });

  it("refuses a ref to a file that does not exist", () => {
    const dangling = spec([schemaFile("a.json", { title: "A", properties: { x: { $ref: "missing.json" } } })]);
    expect(() => toComponentsForm(dangling)).toThrow(/schemas\/missing.json, which does not exist/);
  });
});

describe("dereference", () => {
  it("merges a ref with annotations and keeps constraints beside a ref in allOf", () => {
    const out = dereference({
      a: { $ref: "#/defs/s", description: "mine" },
      b: { $ref: "#/defs/s", maxLength: 3 },
      defs: { s: { type: "string", description: "theirs" } },
    });
    expect(out.a).toEqual({ type: "string", description: "mine" });
    expect(out.b).toEqual({ maxLength: 3, allOf: [{ type: "string", description: "theirs" }] });
  });

  it("refuses circular refs and dangling pointers", () => {
    expect(() => dereference({ a: { $ref: "#/b" }, b: { $ref: "#/a" } })).toThrow(/circular \$ref/);
    expect(() => dereference({ a: { $ref: "#/nothing" } })).toThrow(/points to nothing/);
  });
});

describe("findDrift", () => {
  it("names files that are missing, changed or no longer produced", async () => {
    const dir = await mkdtemp(path.join(os.tmpdir(), "drift-"));
    try {
      await writeFile(path.join(dir, "same.ts"), "same");
      await writeFile(path.join(dir, "changed.ts"), "old");
      await writeFile(path.join(dir, "stale.ts"), "stale");
      const expected = new Map([
        ["same.ts", "same"],
        ["changed.ts", "new"],
        ["missing.ts", "x"],
      ]);
      expect(await findDrift(expected, dir)).toEqual([
        "changed.ts: differs from what the spec produces",
        "missing.ts: missing",
        "stale.ts: not produced by the spec any more",
      ]);
      expect(await findDrift(new Map([["same.ts", "same"]]), dir)).toHaveLength(2);
    } finally {
      await rm(dir, { recursive: true, force: true });
    }
  });
});
