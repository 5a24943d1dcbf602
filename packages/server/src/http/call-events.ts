/** A call's event stream (the tasks extension, docs/protocol.md 9.3): its progress, then its result, as server-sent events. */
import type { CallStatus } from "@otc/types";
import { everyOn } from "../core/clock.js";
import type { OxpCore } from "../core/oxp-core.js";

/** Options of {@link callEventStream}. */
export interface CallEventStreamOptions {
  core: OxpCore;
  principal: string;
  callId: string;
  /** The call's status when the stream was asked for (it exists and belongs to the principal). */
  status: CallStatus;
  /** The `Last-Event-ID` sent: a progress number, or `result`. */
  lastEventId: string | undefined;
  /** How often a comment keeps an idle stream open, in milliseconds. */
  keepAliveMs: number;
  /** Told once when the stream ends, whoever ends it. */
  onClose(): void;
}

const encoder = new TextEncoder();

/** One event in the text/event-stream format: its id, its type, and its data on one line (JSON has no newline). */
function event(id: string, type: string, data: unknown): Uint8Array {
  return encoder.encode(`id: ${id}\nevent: ${type}\ndata: ${JSON.stringify(data)}\n\n`);
}

/**
 * The stream of a call's events: a `progress` event (id: the progress's number) whenever a newer progress is kept,
 * then one `result` event (id `result`) with the CallToolResponse, after which the stream ends. Resumed after
 * `lastEventId`, it starts with the latest progress if that is newer. A slow reader is sent the latest progress
 * when it reads again, never a backlog; a comment every `keepAliveMs` keeps an idle stream open.
 */
export function callEventStream(options: CallEventStreamOptions): ReadableStream<Uint8Array> {
  const { core, principal, callId, keepAliveMs } = options;
  const resumedAfter = options.lastEventId?.trim();
  if (resumedAfter === "result") {
    // The client has the result already: nothing follows it.
    options.onClose();
    return new ReadableStream({
      start(controller) {
        controller.close();
      },
    });
  }
  let sentSeq = resumedAfter !== undefined && /^[0-9]{1,15}$/.test(resumedAfter) ? Number(resumedAfter) : 0;
  let controller: ReadableStreamDefaultController<Uint8Array>;
  let closed = false;
  let unwatch: (() => void) | undefined;
  // On the core's clock: a test moves it past a keep-alive instead of waiting for one.
  let stopKeepAlive: (() => void) | undefined;
  let lookingUp = false;

  const close = () => {
    if (closed) {
      return;
    }
    closed = true;
    unwatch?.();
    stopKeepAlive?.();
    options.onClose();
  };
  const finish = (status: CallStatus) => {
    if (status.result) {
      controller.enqueue(event("result", "result", status.result));
    }
    close();
    controller.close();
  };
  /** Sends a progress the reader has not seen, if it is ready for more (a slow reader gets the latest later). */
  const send = (state: { status: CallStatus; seq: number }) => {
    const { progress } = state.status;
    if (progress && state.seq > sentSeq && (controller.desiredSize ?? 0) > 0) {
      sentSeq = state.seq;
      controller.enqueue(event(String(state.seq), "progress", progress));
    }
  };
  let again = false;
  /** Reads the call's state and sends what is new: a progress, or the result and the end. */
  const lookUp = async (): Promise<void> => {
    if (closed) {
      return;
    }
    if (lookingUp) {
      again = true;
      return;
    }
    lookingUp = true;
    try {
      const state = await core.callState(principal, callId);
      if (closed) {
        return;
      }
      if (!state) {
        // Its record is gone (a run the server lost): nothing more will come.
        close();
        controller.close();
      } else if (state.status.status !== "running") {
        finish(state.status);
      } else {
        send(state);
      }
    } catch {
      // A store that cannot answer now may answer at the next change or look.
    } finally {
      lookingUp = false;
    }
    if (again) {
      again = false;
      await lookUp();
    }
  };
  /** Follows the call: on every change, this process's run or another's (the core's task board tells both). */
  const follow = () => {
    unwatch = core.watchCall(principal, callId, () => {
      // This process's own run answers at once; another's is looked up in the store.
      const state = core.localCallState(principal, callId);
      if (state && state.status.status === "running") {
        send(state);
      } else {
        void lookUp();
      }
    });
    void lookUp();
  };

  return new ReadableStream<Uint8Array>(
    {
      start(streamController) {
        controller = streamController;
        // How long a client waits before it reconnects, and bytes that put the stream's headers on the wire.
        controller.enqueue(encoder.encode("retry: 2000\n\n"));
        if (options.status.status !== "running") {
          finish(options.status);
          return;
        }
        follow();
        stopKeepAlive = everyOn(core.clock, keepAliveMs, () => {
          if (!closed && (controller.desiredSize ?? 0) > 0) {
            controller.enqueue(encoder.encode(": keep-alive\n\n"));
          }
        });
      },
      pull() {
        return lookUp();
      },
      cancel() {
        close();
      },
    },
    { highWaterMark: 4 },
  );
}
