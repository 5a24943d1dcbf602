// parseTraceparent against the W3C Trace Context rules for `traceparent`, row by row, and against
// @opentelemetry/core's own parser (what a registered W3C propagator would read) on every row.
import { parseTraceParent as otelParse } from "@opentelemetry/core";
import { describe, expect, it } from "vitest";
import { parseTraceparent } from "./traceparent.js";

const TRACE = "4bf92f3577b34da6a3ce929d0e0e4736";
const PARENT = "00f067aa0ba902b7";
const header = (version: string, flags = "01", trace = TRACE, parent = PARENT) =>
  `${version}-${trace}-${parent}-${flags}`;

/** Each row: what it tests, the header, and the trace flags when it is valid (undefined: invalid). */
const ROWS: [string, string, number | undefined][] = [
  ["version 00, sampled", header("00"), 1],
  ["version 00, not sampled", header("00", "00"), 0],
  ["version 00, flags this version does not define (kept, ignored by readers)", header("00", "ff"), 255],
  ["version ff, which is invalid whatever follows", header("ff"), undefined],
  ["version ff with more fields", `${header("ff")}-more`, undefined],
  ["version 00 with anything after its flags", `${header("00")}-extra`, undefined],
  ["version 00 with a dash after its flags", `${header("00")}-`, undefined],
  ["a later version, as long as version 00", header("01"), 1],
  ["a later version with more fields", `${header("01")}-future-fields`, 1],
  ["a later version with a dash after its flags", `${header("cc")}-`, 1],
  ["a later version whose flags are followed by something other than a dash", `${header("01")}x`, undefined],
  ["a later version cut short before its flags", `01-${TRACE}-${PARENT}`, undefined],
  ["an all-zero trace id", header("00", "01", "0".repeat(32)), undefined],
  ["an all-zero parent id", header("00", "01", TRACE, "0".repeat(16)), undefined],
  ["an uppercase trace id", header("00", "01", TRACE.toUpperCase()), undefined],
  ["an uppercase parent id", header("00", "01", TRACE, PARENT.toUpperCase()), undefined],
  ["uppercase flags", header("00", "0A"), undefined],
  ["an uppercase version", header("0A"), undefined],
  ["a trace id one digit short", header("00", "01", TRACE.slice(1)), undefined],
  ["a trace id one digit long", header("00", "01", `${TRACE}0`), undefined],
  ["a parent id one digit short", header("00", "01", TRACE, PARENT.slice(1)), undefined],
  ["a non-hex digit", header("00", "01", `${TRACE.slice(0, -1)}g`), undefined],
  ["one-digit flags", header("00", "1"), undefined],
  ["another separator", header("00").replaceAll("-", "_"), undefined],
  ["two headers joined by a comma", `${header("00")}, ${header("00", "00")}`, undefined],
  ["garbage", "00-zzzz-not-valid", undefined],
  ["the empty string", "", undefined],
  ["a space either side (HTTP's optional whitespace)", ` ${header("00")} `, 1],
];

describe("parseTraceparent", () => {
  it.each(ROWS)("%s", (_what, value, traceFlags) => {
    const parsed = parseTraceparent(value);
    if (traceFlags === undefined) {
      expect(parsed).toBeUndefined();
    } else {
      expect(parsed).toEqual({ version: value.trim().slice(0, 2), traceId: TRACE, parentId: PARENT, traceFlags });
    }
  });

  it.each(ROWS)("agrees with @opentelemetry/core's parser: %s", (_what, value) => {
    const ours = parseTraceparent(value);
    const theirs = otelParse(value);
    expect(ours && { traceId: ours.traceId, spanId: ours.parentId, traceFlags: ours.traceFlags }).toEqual(
      theirs === null ? undefined : { traceId: theirs.traceId, spanId: theirs.spanId, traceFlags: theirs.traceFlags },
    );
  });

  it("reads no header as no trace", () => {
    expect(parseTraceparent(undefined)).toBeUndefined();
  });
});
