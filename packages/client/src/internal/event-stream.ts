/** Reads `text/event-stream` (a call's events, docs/protocol.md 9.3) into events, as the HTML standard's parser does, each event bounded. */
import { OxpResponseTooLargeError } from "../errors.js";

/** One event of a stream: its type (`message` when none was named), its data lines joined by `\n`. */
export interface ServerSentEvent {
  /** The `event` field, or `message`. */
  event: string;
  /** The `data` lines, joined by `\n`. */
  data: string;
  /** The last event id when the event was dispatched (the stream's, not only this event's), if any. */
  id: string | undefined;
}

/**
 * A parser fed decoded text in chunks of any size; `push` returns the events the chunk completed. Lines end
 * in `\r\n`, `\n` or `\r`; comments (`:`) and unknown fields are skipped; an event without data is not
 * dispatched (its id still counts). The text held for one event (its unfinished line and data) is bounded
 * by `maxEventChars`: past it `push` throws an OxpResponseTooLargeError, so a stream that never ends a line
 * or an event cannot fill the memory.
 *
 * @example
 * const parser = new EventStreamParser(1 << 20);
 * parser.push("id: 1\nevent: progress\ndata: {\"progress\": 1}\n\n"); // [{ id: "1", event: "progress", data: '{"progress": 1}' }]
 */
export class EventStreamParser {
  /** The id that `Last-Event-ID` resumes after: the last one an event was dispatched (or skipped) with. */
  lastEventId: string | undefined;
  #buffer = "";
  #data: string[] = [];
  #dataChars = 0;
  #event = "";
  #idBuffer: string | undefined;

  constructor(private readonly maxEventChars: number) {}

  /** Parses `text`, the stream's next decoded chunk; returns the events it completed, in order. */
  push(text: string): ServerSentEvent[] {
    this.#buffer += text;
    const events: ServerSentEvent[] = [];
    let start = 0;
    for (;;) {
      const end = this.#lineEnd(start);
      if (end === -1) {
        break;
      }
      const line = this.#buffer.slice(start, end);
      start = end + (this.#buffer[end] === "\r" && this.#buffer[end + 1] === "\n" ? 2 : 1);
      const event = this.#line(line);
      if (event) {
        events.push(event);
      }
    }
    this.#buffer = this.#buffer.slice(start);
    if (this.#buffer.length + this.#dataChars > this.maxEventChars) {
      throw new OxpResponseTooLargeError(200, this.maxEventChars);
    }
    return events;
  }

  /** Where the line starting at `start` ends, or -1 while it may go on (a final `\r` may be half of `\r\n`). */
  #lineEnd(start: number): number {
    for (let index = start; index < this.#buffer.length; index++) {
      const char = this.#buffer[index];
      if (char === "\n") {
        return index;
      }
      if (char === "\r") {
        return index + 1 < this.#buffer.length ? index : -1;
      }
    }
    return -1;
  }

  /** Takes one line; returns the event a blank line dispatches. */
  #line(line: string): ServerSentEvent | undefined {
    if (line === "") {
      return this.#dispatch();
    }
    if (line.startsWith(":")) {
      return undefined;
    }
    const colon = line.indexOf(":");
    const field = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) {
      value = value.slice(1);
    }
    if (field === "data") {
      this.#data.push(value);
      this.#dataChars += value.length + 1;
      if (this.#dataChars > this.maxEventChars) {
        throw new OxpResponseTooLargeError(200, this.maxEventChars);
      }
    } else if (field === "event") {
      this.#event = value;
    } else if (field === "id" && !value.includes("\u0000")) {
      this.#idBuffer = value;
    }
    // `retry` is the server's reconnection delay; the client keeps its own (see the handle's reconnects).
    return undefined;
  }

  #dispatch(): ServerSentEvent | undefined {
    this.lastEventId = this.#idBuffer;
    const event = this.#data.length > 0 ? { event: this.#event || "message", data: this.#data.join("\n") } : undefined;
    this.#data = [];
    this.#dataChars = 0;
    this.#event = "";
    return event ? { ...event, id: this.lastEventId } : undefined;
  }
}
