/** A reader of `text/event-stream` (the HTML standard's parsing rules) for a fetch body: EventSource cannot send the server's credentials. */

/** One event of a stream: its type (`message` when the stream names none), its data and its id. */
export interface ServerSentEvent {
  event: string;
  data: string;
  id: string | undefined;
}

/** A stream that holds more than `maxBytes` in one event (or one line) before it ends: the page stops reading it. */
export class EventTooLargeError extends Error {
  override name = "EventTooLargeError";
}

/**
 * Parses a stream's text as it arrives, chunk by chunk (split anywhere, even inside a line): comment lines
 * (`: keep-alive`) and `retry` are skipped, `data` lines are joined with newlines, an event is dispatched at the
 * blank line that ends it, and one without data is dropped. What one event holds is bounded by `maxChars`.
 *
 * @example
 * const parser = new EventStreamParser(1024);
 * parser.push("event: progress\ndata: {\"progress\":1}\nid: 1\n\n"); // [{ event: "progress", data: '{"progress":1}', id: "1" }]
 */
export class EventStreamParser {
  private line = "";
  private data: string[] = [];
  private size = 0;
  private event = "";
  private id: string | undefined;
  /** True once a chunk ended with `\r`: a `\n` that opens the next chunk belongs to the same line break. */
  private afterCarriageReturn = false;

  constructor(private readonly maxChars: number) {}

  /** The events that `chunk` completes, in order. Throws EventTooLargeError past the bound. */
  push(chunk: string): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    let start = 0;
    if (this.afterCarriageReturn && chunk.startsWith("\n")) {
      start = 1;
    }
    this.afterCarriageReturn = false;
    for (let at = start; at < chunk.length; at++) {
      const char = chunk[at];
      if (char !== "\n" && char !== "\r") {
        continue;
      }
      this.line += chunk.slice(start, at);
      this.take(this.line, events);
      this.line = "";
      if (char === "\r") {
        if (at + 1 === chunk.length) {
          this.afterCarriageReturn = true;
        } else if (chunk[at + 1] === "\n") {
          at++;
        }
      }
      start = at + 1;
    }
    this.line += chunk.slice(start);
    if (this.line.length + this.size > this.maxChars) {
      throw new EventTooLargeError(`An event of the stream is longer than ${this.maxChars} characters`);
    }
    return events;
  }

  private take(line: string, events: ServerSentEvent[]): void {
    if (line === "") {
      if (this.data.length > 0) {
        events.push({ event: this.event || "message", data: this.data.join("\n"), id: this.id });
      }
      this.data = [];
      this.size = 0;
      this.event = "";
      return;
    }
    if (line.startsWith(":")) {
      return;
    }
    const colon = line.indexOf(":");
    const name = colon === -1 ? line : line.slice(0, colon);
    let value = colon === -1 ? "" : line.slice(colon + 1);
    if (value.startsWith(" ")) {
      value = value.slice(1);
    }
    if (name === "data") {
      this.data.push(value);
      this.size += value.length + 1;
      if (this.size > this.maxChars) {
        throw new EventTooLargeError(`An event of the stream is longer than ${this.maxChars} characters`);
      }
    } else if (name === "event") {
      this.event = value;
    } else if (name === "id" && !value.includes("\0")) {
      this.id = value;
    }
  }
}
