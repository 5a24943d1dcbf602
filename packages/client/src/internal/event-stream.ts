/** Reads `text/event-stream` (a call's events, docs/protocol.md 9.3) into events through eventsource-parser, each event bounded. */
import { createParser, type EventSourceParser } from "eventsource-parser";
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
 * A parser fed decoded text in chunks of any size; `push` returns the events the chunk completed. eventsource-parser
 * reads the lines and fields (the HTML standard's rules, linear in the stream however it is cut); around it, this
 * keeps the stream's last event id across events, bounds each event, and ends a line at a `\r` that ends a chunk.
 *
 * - The id carries over to later events without one, as the HTML standard says, and is what `Last-Event-ID`
 *   resumes after. eventsource-parser 3 does not report the id of a block without data (4.1's `onId` does, but
 *   needs Node 22.12): such an id is not kept. docs/protocol.md 9.3 gives every event an id and data, and so
 *   does @otc/server (its http/call-events.ts).
 * - The text held for one event (its unfinished line and data) is bounded by `maxEventChars`, and so is each
 *   event's data: past it `push` throws an OxpResponseTooLargeError, so a stream that never ends a line or an
 *   event cannot fill the memory.
 * - eventsource-parser holds a `\r` that ends a chunk until the next one says whether a `\n` follows; here it ends
 *   its line at once (the event it completes is not held back), and a `\n` opening the next chunk is its second half.
 *
 * @example
 * const parser = new EventStreamParser(1 << 20);
 * parser.push("id: 1\nevent: progress\ndata: {\"progress\": 1}\n\n"); // [{ id: "1", event: "progress", data: '{"progress": 1}' }]
 */
export class EventStreamParser {
  /** The id that `Last-Event-ID` resumes after: the last one an event was dispatched with. */
  lastEventId: string | undefined;
  #parser: EventSourceParser;
  #events: ServerSentEvent[] = [];
  /** The last chunk ended in `\r`, given on as `\r\n`: a `\n` opening the next one is already read. */
  #afterCr = false;
  #tooLarge = false;

  constructor(private readonly maxEventChars: number) {
    this.#parser = createParser({
      maxBufferSize: maxEventChars,
      onEvent: ({ id, event, data }) => {
        if (data.length > maxEventChars) {
          this.#tooLarge = true;
        }
        this.lastEventId = id ?? this.lastEventId;
        this.#events.push({ event: event ?? "message", data, id: this.lastEventId });
      },
      onError: (error) => {
        if (error.type === "max-buffer-size-exceeded") {
          this.#tooLarge = true;
        }
        // An unknown field or a `retry` that is no number is skipped; the client keeps its own reconnection delay.
      },
    });
  }

  /** Parses `text`, the stream's next decoded chunk; returns the events it completed, in order. */
  push(text: string): ServerSentEvent[] {
    let chunk = text;
    if (this.#afterCr && chunk.length > 0) {
      this.#afterCr = false;
      chunk = chunk.charCodeAt(0) === LF ? chunk.slice(1) : chunk;
    }
    if (chunk.endsWith("\r")) {
      this.#afterCr = true;
      chunk += "\n";
    }
    if (!this.#tooLarge) {
      this.#parser.feed(chunk);
    }
    const events = this.#events;
    this.#events = [];
    if (this.#tooLarge) {
      throw new OxpResponseTooLargeError(200, this.maxEventChars);
    }
    return events;
  }
}
