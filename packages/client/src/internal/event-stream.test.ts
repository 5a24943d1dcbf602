// The event-stream parser: the HTML standard's rules on lines, fields and dispatch, chunks split anywhere, bounded events.
import { describe, expect, it } from "vitest";
import { OxpResponseTooLargeError } from "../errors.js";
import { EventStreamParser, type ServerSentEvent } from "./event-stream.js";

const parse = (text: string, chunkSize = text.length): ServerSentEvent[] => {
  const parser = new EventStreamParser(1_000);
  const events: ServerSentEvent[] = [];
  for (let at = 0; at < text.length; at += chunkSize) {
    events.push(...parser.push(text.slice(at, at + chunkSize)));
  }
  return events;
};

describe("EventStreamParser", () => {
  it.each<[string, string, ServerSentEvent[]]>([
    [
      "an event with its id and type",
      'id: 1\nevent: progress\ndata: {"progress":1}\n\n',
      [{ id: "1", event: "progress", data: '{"progress":1}' }],
    ],
    ["no type is `message`", "data: x\n\n", [{ id: undefined, event: "message", data: "x" }]],
    ["data lines joined by \\n", "data: a\ndata: b\n\n", [{ id: undefined, event: "message", data: "a\nb" }]],
    [
      "comments, retry and unknown fields skipped",
      ": keep-alive\nretry: 2000\nfoo: bar\ndata: x\n\n",
      [{ id: undefined, event: "message", data: "x" }],
    ],
    [
      "CRLF and CR end lines too",
      "data: a\r\n\r\ndata: b\r\rdata: c\n\n",
      [
        { id: undefined, event: "message", data: "a" },
        { id: undefined, event: "message", data: "b" },
        { id: undefined, event: "message", data: "c" },
      ],
    ],
    [
      "only one space after the colon is dropped",
      "data:  x\ndata:y\n\n",
      [{ id: undefined, event: "message", data: " x\ny" }],
    ],
    [
      "an event without data is not dispatched",
      "id: 7\nevent: progress\n\ndata: x\n\n",
      [{ id: "7", event: "message", data: "x" }],
    ],
    ["an unfinished event is held", "data: x\n", []],
    [
      "the id carries over to later events",
      "id: 3\ndata: a\n\ndata: b\n\n",
      [
        { id: "3", event: "message", data: "a" },
        { id: "3", event: "message", data: "b" },
      ],
    ],
  ])("%s", (_name, text, want) => {
    expect(parse(text)).toEqual(want);
    // Split anywhere, a CR and its LF included, the stream means the same.
    expect(parse(text, 1)).toEqual(want);
    expect(parse(text, 3)).toEqual(want);
  });

  it("keeps the last event id, an id without data included; ignores an id with a NUL", () => {
    const parser = new EventStreamParser(1_000);
    parser.push("id: 4\ndata: x\n\n");
    expect(parser.lastEventId).toBe("4");
    parser.push("id: result\n\n");
    expect(parser.lastEventId).toBe("result");
    parser.push("id: a\u0000b\ndata: y\n\n");
    expect(parser.lastEventId).toBe("result");
  });

  it("refuses an event, or a line, longer than its bound", () => {
    expect(() => new EventStreamParser(10).push(`data: ${"x".repeat(11)}\n`)).toThrow(OxpResponseTooLargeError);
    expect(() => new EventStreamParser(10).push(`: ${"x".repeat(20)}`)).toThrow(OxpResponseTooLargeError);
    const parser = new EventStreamParser(10);
    expect(() => {
      for (let line = 0; line < 5; line++) {
        parser.push("data: xxx\n");
      }
    }).toThrow(OxpResponseTooLargeError);
    // Dispatched events free their room.
    const steady = new EventStreamParser(10);
    for (let event = 0; event < 100; event++) {
      expect(steady.push("data: xxx\n\n")).toHaveLength(1);
    }
  });
});
