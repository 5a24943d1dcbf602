import { describe, expect, it } from "vitest";
import { EventStreamParser, EventTooLargeError } from "./event-stream.js";

/** Every event of `chunks`, pushed one after the other into one parser. */
const parseAll = (chunks: string[], max = 1024) => {
  const parser = new EventStreamParser(max);
  return chunks.flatMap((chunk) => parser.push(chunk));
};

describe("EventStreamParser", () => {
  it.each([
    [
      "a server's progress then result",
      [
        'retry: 1000\n\nid: 1\nevent: progress\ndata: {"progress":1}\n\n',
        'id: result\nevent: result\ndata: {"a":1}\n\n',
      ],
      [
        { event: "progress", data: '{"progress":1}', id: "1" },
        { event: "result", data: '{"a":1}', id: "result" },
      ],
    ],
    [
      "chunks split inside lines and fields",
      ["ev", "ent: progress\nda", "ta: x\n", "\n"],
      [{ event: "progress", data: "x", id: undefined }],
    ],
    ["CRLF, and CR LF split between chunks", ["data: a\r", "\n\r\n"], [{ event: "message", data: "a", id: undefined }]],
    ["lone CRs", ["data: a\rdata: b\r\r"], [{ event: "message", data: "a\nb", id: undefined }]],
    ["comments and events without data", [": keep-alive\n\nevent: progress\n\n"], []],
    [
      "a value without its space, a field without colon",
      ["data:x\ndata\n\n"],
      [{ event: "message", data: "x\n", id: undefined }],
    ],
    ["an unfinished event", ["event: result\ndata: {}\n"], []],
  ])("%s", (_name, chunks, want) => {
    expect(parseAll(chunks)).toEqual(want);
  });

  it("keeps the last id for the events after it, as a stream's last event id", () => {
    expect(parseAll(["id: 7\ndata: a\n\ndata: b\n\n"]).map((event) => event.id)).toEqual(["7", "7"]);
  });

  it("stops at an event longer than its bound, whole or in one unfinished line", () => {
    expect(() => parseAll(["data: 0123456789\n", "data: 0123456789\n"], 16)).toThrow(EventTooLargeError);
    expect(() => parseAll(["data: ", "x".repeat(20)], 16)).toThrow(EventTooLargeError);
    expect(parseAll(["data: 0123456789\n\n", "data: 0123456789\n\n"], 16)).toHaveLength(2);
  });
});
