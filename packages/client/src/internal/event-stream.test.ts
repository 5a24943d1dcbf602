// The event-stream parser: the HTML standard's rules on lines, fields and dispatch, chunks split anywhere, bounded events,
// and the same events as eventsource-parser, but for a CR that ends a chunk.
import { createParser, type EventSourceMessage } from "eventsource-parser";
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
      "an event without data is not dispatched, nor is its type kept",
      "event: progress\n\ndata: x\n\n",
      [{ id: undefined, event: "message", data: "x" }],
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

  it("keeps the last event id; ignores an id with a NUL, and one sent without data (see below)", () => {
    const parser = new EventStreamParser(1_000);
    parser.lastEventId = "2";
    parser.push("data: x\n\n");
    expect(parser.lastEventId).toBe("2");
    parser.push("id: 4\ndata: x\n\n");
    expect(parser.lastEventId).toBe("4");
    parser.push("id: result\n\n");
    expect(parser.lastEventId).toBe("4");
    parser.push("id: a\u0000b\ndata: y\n\n");
    expect(parser.lastEventId).toBe("4");
  });

  it("refuses an event, or a line, longer than its bound", () => {
    expect(() => new EventStreamParser(10).push(`data: ${"x".repeat(11)}\n`)).toThrow(OxpResponseTooLargeError);
    // An event whole in one chunk too, which leaves nothing held at the chunk's end.
    expect(() => new EventStreamParser(10).push(`data: ${"x".repeat(11)}\n\n`)).toThrow(OxpResponseTooLargeError);
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

  // That its cost is linear however the line is cut (eventsource-parser joins a line's pieces once, when it ends) is
  // measured in event-stream.slow.test.ts.
  it("reads a 4 MiB line sent in 4 KiB chunks", () => {
    const text = `data: ${"x".repeat(4 * 1024 * 1024)}\n\n`;
    const parser = new EventStreamParser(16 * 1024 * 1024);
    const events: ServerSentEvent[] = [];
    for (let at = 0; at < text.length; at += 4_096) {
      events.push(...parser.push(text.slice(at, at + 4_096)));
    }
    expect(events).toHaveLength(1);
    expect(events[0]?.data.length).toBe(4 * 1024 * 1024);
  });

  it("refuses a line that never ends at its bound, in small chunks", () => {
    const parser = new EventStreamParser(1024 * 1024);
    const chunk = "x".repeat(4_096);
    let pushed = 0;
    expect(() => {
      for (;;) {
        pushed += chunk.length;
        parser.push(chunk);
      }
    }).toThrow(OxpResponseTooLargeError);
    expect(pushed).toBe(1024 * 1024 + 4_096);
    // And keeps refusing: the stream is not read on past its bound.
    expect(() => parser.push("\n\n")).toThrow(OxpResponseTooLargeError);
  });

  it("takes a CR that ends a chunk and the LF that opens a later one as one line end, empty chunks between", () => {
    const parser = new EventStreamParser(1_000);
    expect(parser.push("data: a\r")).toEqual([]);
    expect(parser.push("")).toEqual([]);
    expect(parser.push("\n")).toEqual([]);
    expect(parser.push("\r")).toEqual([{ id: undefined, event: "message", data: "a" }]);
    // A CR then anything but LF: the CR alone ended the line.
    expect(parser.push("data: b\r")).toEqual([]);
    expect(parser.push("\rdata: c\n\n")).toEqual([
      { id: undefined, event: "message", data: "b" },
      { id: undefined, event: "message", data: "c" },
    ]);
  });

  describe("gives the events eventsource-parser gives", () => {
    /** A small deterministic generator (mulberry32), so a failure can be replayed from its seed. */
    const random = (seed: number) => () => {
      seed = (seed + 0x6d2b79f5) | 0;
      let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
      t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
      return ((t ^ (t >>> 14)) >>> 0) / 4_294_967_296;
    };
    const FIELDS = [
      "data: x",
      "data:y",
      "data",
      "data:  two spaces",
      "data: a:b",
      "event: progress",
      "event:",
      "event",
      ": a comment",
      ":",
      "retry: 100",
      "retry: soon",
      "foo: bar",
      "id: a\u0000b",
      "data: \u00e9\u{1f600}",
    ];
    const ENDS = ["\n", "\r\n", "\r"];

    /** A stream of blocks of random lines; a block with an id has data too (see the last test). */
    function stream(next: () => number): string {
      const pick = <T>(items: readonly T[]) => items[Math.floor(next() * items.length)] as T;
      let text = "";
      for (let block = 0, blocks = 1 + Math.floor(next() * 6); block < blocks; block++) {
        const lines = Array.from({ length: Math.floor(next() * 5) }, () => pick(FIELDS));
        if (next() < 0.4) {
          lines.splice(Math.floor(next() * (lines.length + 1)), 0, next() < 0.2 ? "id:" : `id: ${block}`);
          lines.push("data: with an id");
        }
        text += lines.map((line) => line + pick(ENDS)).join("");
        // The last block may stay unfinished: neither parser dispatches it.
        if (block < blocks - 1 || next() < 0.7) {
          text += pick(ENDS);
        }
      }
      return text;
    }

    /** The stream cut into chunks of 1 to 8 characters. */
    function chunks(text: string, next: () => number): string[] {
      const out: string[] = [];
      for (let at = 0; at < text.length; ) {
        const size = 1 + Math.floor(next() * 8);
        out.push(text.slice(at, at + size));
        at += size;
      }
      return out;
    }

    /**
     * eventsource-parser's events as this parser's: its type defaults to `message`, and its id carries over. A CR
     * that ends the stream is followed by a LF, which both take as half of CRLF: eventsource-parser holds the CR
     * until the next character comes, this parser takes it at once (see below).
     */
    function library(parts: readonly string[]): ServerSentEvent[] {
      const events: ServerSentEvent[] = [];
      let lastId: string | undefined;
      const parser = createParser({
        onEvent: (message: EventSourceMessage) => {
          lastId = message.id ?? lastId;
          events.push({ event: message.event ?? "message", data: message.data, id: lastId });
        },
      });
      for (const part of parts) {
        parser.feed(part);
      }
      if (parts.at(-1)?.endsWith("\r")) {
        parser.feed("\n");
      }
      return events;
    }

    it("on 500 random streams, each cut at random and whole", () => {
      let dispatched = 0;
      for (let seed = 1; seed <= 500; seed++) {
        const next = random(seed);
        const text = stream(next);
        const parts = chunks(text, next);
        const ours = new EventStreamParser(1_000_000);
        const got = parts.flatMap((part) => ours.push(part));
        expect({ seed, got }).toEqual({ seed, got: library(parts) });
        dispatched += got.length;
        expect({ seed, got: new EventStreamParser(1_000_000).push(text) }).toEqual({ seed, got: library([text]) });
      }
      // Streams with events in them, not only ones that both parsers leave empty.
      expect(dispatched).toBeGreaterThan(1_000);
    });

    it("but for a CR that ends a chunk, taken as a line end here at once, and there once the next chunk comes", () => {
      const parser = new EventStreamParser(1_000);
      expect(parser.push("data: a\r\r")).toEqual([{ id: undefined, event: "message", data: "a" }]);
      const held: EventSourceMessage[] = [];
      const other = createParser({ onEvent: (message) => held.push(message) });
      other.feed("data: a\r\r");
      expect(held).toEqual([]);
      other.feed("\n");
      expect(held).toEqual([{ id: undefined, event: undefined, data: "a" }]);
    });

    it("and, as it does, not the id of a block without data (the HTML standard would move Last-Event-ID to it)", () => {
      // eventsource-parser 3 reports no such id (4.1's onId would, on Node 22.12 and later); OXP sends none.
      const text = "id: 1\ndata: a\n\nid: 2\n\ndata: b\n\n";
      const want = [
        { id: "1", event: "message", data: "a" },
        { id: "1", event: "message", data: "b" },
      ];
      expect(new EventStreamParser(1_000).push(text)).toEqual(want);
      expect(library([text])).toEqual(want);
    });
  });
});
