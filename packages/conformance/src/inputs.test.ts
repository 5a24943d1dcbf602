// Unit tests: inputs built from schemas, and the kit's promise to talk to the given server only.
import { describe, expect, it } from "vitest";
import { Http } from "./http.js";
import { minimalObject, sampleValue, wrongTypeFor } from "./inputs.js";

describe("inputs from schemas", () => {
  it("fill every required property with a value its simple constraints accept", () => {
    expect(
      minimalObject({
        type: "object",
        properties: {
          a: { type: "number" },
          n: { type: "integer", minimum: 3 },
          s: { type: "string", minLength: 2 },
          e: { type: "string", enum: ["x", "y"] },
          o: { type: "object", properties: { z: { type: "boolean" } }, required: ["z"] },
          optional: { type: "string" },
        },
        required: ["a", "n", "s", "e", "o"],
      }),
    ).toEqual({ a: 1, n: 3, s: "xx", e: "x", o: { z: true } });
  });

  it("give up where a value cannot be made safely", () => {
    expect(sampleValue({ type: "string", pattern: "^[0-9]+$" })).toBeUndefined();
    expect(minimalObject({ properties: { d: { type: "string", format: "date" } }, required: ["d"] })).toBeUndefined();
  });

  it("pick a wrong type for a required property: strings for numbers, numbers for strings", () => {
    expect(wrongTypeFor({ properties: { a: { type: "number" } }, required: ["a"] })).toEqual({ name: "a", value: "5" });
    expect(wrongTypeFor({ properties: { s: { type: "string" } }, required: ["s"] })).toEqual({ name: "s", value: 5 });
    expect(wrongTypeFor({ properties: {}, required: [] })).toBeUndefined();
  });
});

describe("Http", () => {
  it("refuses any URL outside the server under test", async () => {
    const http = new Http("http://127.0.0.1:9", async () => ({}));
    await expect(http.send({ url: "http://example.com/steal" })).rejects.toThrow(
      /only http:\/\/127\.0\.0\.1:9 is under test/,
    );
  });

  it("bounds every request in time", async () => {
    const http = new Http("http://127.0.0.1:9", async () => ({}), 200);
    const started = Date.now();
    await expect(http.send({ path: "/health" })).rejects.toThrow();
    expect(Date.now() - started).toBeLessThan(2_000);
  });
});
