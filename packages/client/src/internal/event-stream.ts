/** Reads `text/event-stream` (a call's events, docs/protocol.md 9.3) into events, as the HTML standard's parser does, each event bounded. */
import { OxpResponseTooLargeError } from "../errors.js";

const LF = 10;

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
 * in `\r\n`, `\n` or `\r` (a `\r` ends its line at once; a `\n` right after it, in this chunk or the next,
 * is its second half); comments (`:`) and unknown fields are skipped; an event without data is not
 * dispatched (its id still counts). The text held for one event (its unfinished line and data) is bounded
 * by `maxEventChars`: past it `push` throws an OxpResponseTooLargeError, so a stream that never ends a line
 * or an event cannot fill the memory; and its cost is linear in the stream, however it is cut (no line is
 * searched again per chunk), so one that never ends a line cannot take the CPU either.
 *
 * eventsource-parser gives the same events (a test holds them to it) but drops the id of an event without
 * data, which `Last-Event-ID` resumes after here as the HTML standard says, and holds a final `\r` until the
 * next chunk: hence this parser.
 *
 * @example
 * const parser = new EventStreamParser(1 << 20);
 * parser.push("id: 1\nevent: progress\ndata: {\"progress\": 1}\n\n"); // [{ id: "1", event: "progress", data: '{"progress": 1}' }]
 */
export class EventStreamParser {
  /** The id that `Last-Event-ID` resumes after: the last one an event was dispatched (or skipped) with. */
  lastEventId: string | undefined;
  /**
   * The unfinished line, in the pieces it came in: joined once, when its end comes. Each chunk is searched for line
   * ends once, from where the last line ended, so a long line costs its length, not its length times its chunks.
   */
  #pending: string[] = [];
  #pendingChars = 0;
  /** The last chunk ended in `\r`: a `\n` opening the next one is the second half of that line end. */
  #afterCr = false;
  #scanned = 0;
  #data: string[] = [];
  #dataChars = 0;
  #event = "";
  #idBuffer: string | undefined;

  constructor(private readonly maxEventChars: number) {}

  /**
   * The characters this parser has gone through: each chunk's once, and an unfinished line's once more when it
   * ends and is joined. Linear in the stream's length whatever its chunks; a test holds it to that.
   */
  get scannedChars(): number {
    return this.#scanned;
  }

  /** Parses `text`, the stream's next decoded chunk; returns the events it completed, in order. */
  push(text: string): ServerSentEvent[] {
    const events: ServerSentEvent[] = [];
    this.#scanned += text.length;
    let start = 0;
    if (this.#afterCr && text.length > 0) {
      this.#afterCr = false;
      start = text.charCodeAt(0) === LF ? 1 : 0;
    }
    // The next `\n` and the next `\r`, each looked for again only once the line that ends there is taken.
    let lf = text.indexOf("\n", start);
    let cr = text.indexOf("\r", start);
    while (lf !== -1 || cr !== -1) {
      const end = cr === -1 || (lf !== -1 && lf < cr) ? lf : cr;
      const line = this.#take(text.slice(start, end));
      start = end + 1;
      if (end === cr) {
        if (start === text.length) {
          this.#afterCr = true;
        } else if (text.charCodeAt(start) === LF) {
          start++;
        }
      }
      if (lf !== -1 && lf < start) {
        lf = text.indexOf("\n", start);
      }
      if (cr !== -1 && cr < start) {
        cr = text.indexOf("\r", start);
      }
      const event = this.#line(line);
      if (event) {
        events.push(event);
      }
    }
    if (start < text.length) {
      this.#pending.push(start === 0 ? text : text.slice(start));
      this.#pendingChars += text.length - start;
    }
    if (this.#pendingChars + this.#dataChars > this.maxEventChars) {
      throw new OxpResponseTooLargeError(200, this.maxEventChars);
    }
    return events;
  }

  /** The whole line that `last` ends: the pieces held for it before, then `last`. */
  #take(last: string): string {
    if (this.#pending.length === 0) {
      return last;
    }
    this.#pending.push(last);
    const line = this.#pending.join("");
    this.#scanned += line.length;
    this.#pending = [];
    this.#pendingChars = 0;
    return line;
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
