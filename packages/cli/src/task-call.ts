/** `otc call --async`: a call run as a task, its progress drawn in place on a terminal (a line each elsewhere), Ctrl-C cancelling it. */
import { type AsyncCall, type OxpClient, OxpExtensionUnavailableError, OxpServerError } from "@otc/client";
import type { CallProgress, CallStatus, CallToolRequest, CallToolResponse } from "@otc/types";
import type { Io } from "./io.js";
import { terminalSafe } from "./terminal-safe.js";

/** The width of the progress bar itself, in characters. */
const BAR_WIDTH = 24;
/** How long the cancel after Ctrl-C may take before otc gives up on it, in milliseconds. */
const CANCEL_TIMEOUT_MS = 10_000;

/** How a call run as a task ended here: its response, or Ctrl-C, with the status the cancel left (or why there is none). */
export type TaskOutcome =
  | { response: CallToolResponse }
  | { interrupted: { status: CallStatus; note?: undefined } | { status?: undefined; note: string } };

/** A number as a person reads it: whole numbers as they are, others to one decimal. */
const shown = (value: number) => (Number.isInteger(value) ? String(value) : value.toFixed(1));

/**
 * One progress update as a line: with a bar when `columns` (a terminal's width) is given, cut to fit it, else
 * plain. The tool's message is made terminal-safe and only its first line is shown.
 *
 * @example
 * progressLine({ progress: 3, total: 4, message: "Copying" }); // "progress: 3/4 (75%) Copying"
 * progressLine({ progress: 3, total: 4 }, 80); // "[##################------]  75% 3/4"
 */
export function progressLine(progress: CallProgress, columns?: number): string {
  const message = terminalSafe((progress.message ?? "").split(/\r\n|\r|\n/)[0] ?? "");
  const { total } = progress;
  const share = total !== undefined && total > 0 ? Math.min(1, Math.max(0, progress.progress / total)) : undefined;
  const count = total !== undefined ? `${shown(progress.progress)}/${shown(total)}` : shown(progress.progress);
  const percent = share !== undefined ? `${Math.floor(share * 100)}%` : undefined;
  if (columns === undefined) {
    return `progress: ${count}${percent ? ` (${percent})` : ""}${message ? ` ${message}` : ""}`;
  }
  const filled = Math.round((share ?? 0) * BAR_WIDTH);
  const bar =
    share !== undefined ? `[${"#".repeat(filled)}${"-".repeat(BAR_WIDTH - filled)}] ${percent?.padStart(4)} ` : "";
  const line = `${bar}${count}${message ? ` ${message}` : ""}`;
  // A line as wide as the terminal wraps, and `\r` then redraws only its last row.
  return line.length < columns ? line : `${line.slice(0, Math.max(0, columns - 2))}…`;
}

/** Where progress goes: redrawn in place on a terminal's stderr, or a line per update. `raw` writes unescaped. */
function progressView(io: Io, raw: (text: string) => void) {
  let drawn = false;
  return {
    show(progress: CallProgress) {
      if (io.terminal) {
        // `\r` and "erase to the end of the line" are otc's own; everything from the server went through terminalSafe.
        raw(`\r${progressLine(progress, io.terminal.columns)}\u001b[K`);
        drawn = true;
      } else {
        io.stderr(`${progressLine(progress)}\n`);
      }
    },
    end() {
      if (drawn) {
        raw("\n");
        drawn = false;
      }
    },
  };
}

/** After Ctrl-C: cancels the call at the server and answers its final status, or why there is none. */
async function cancelAfterInterrupt(
  client: OxpClient,
  call: AsyncCall | undefined,
  callId: string,
): Promise<{ status: CallStatus } | { note: string }> {
  const signal = AbortSignal.timeout(CANCEL_TIMEOUT_MS);
  try {
    return { status: call ? await call.cancel({ signal }) : await client.cancelCall(callId, { signal }) };
  } catch (error) {
    if (error instanceof OxpExtensionUnavailableError) {
      return { note: "the server cannot cancel calls (it does not offer the tasks extension); the call may still run" };
    }
    if (error instanceof OxpServerError && error.status === 404) {
      return { note: "the server had not started the call" };
    }
    return { note: `could not cancel the call (${error instanceof Error ? error.message : String(error)})` };
  }
}

/**
 * Runs `request` with `callToolAsync` (a plain call on a server without the tasks extension), showing each progress
 * update on stderr until the call ends. Ctrl-C (SIGINT, or `io.interrupt`) stops waiting and cancels the call at the
 * server; a second Ctrl-C while that runs stops otc at once. Throws what `callToolAsync` and the handle throw.
 */
export async function callAsTask(
  client: OxpClient,
  request: CallToolRequest & { call_id: string },
  output: { io: Io; raw: (text: string) => void },
): Promise<TaskOutcome> {
  const { io } = output;
  const interrupt = new AbortController();
  const onInterrupt = () => interrupt.abort(new Error("interrupted"));
  if (io.interrupt) {
    io.interrupt.addEventListener("abort", onInterrupt, { once: true });
  } else {
    // Once: the second Ctrl-C finds no listener, and Node stops the process as it would without otc's.
    process.once("SIGINT", onInterrupt);
  }
  const view = progressView(io, output.raw);
  let call: AsyncCall | undefined;
  try {
    call = await client.callToolAsync(request, { signal: interrupt.signal });
    if (call.task) {
      io.stderr(`call ${call.callId} is running on the server (Ctrl-C cancels it)\n`);
    }
    for await (const progress of call.progress) {
      view.show(progress);
    }
    return { response: await call.result() };
  } catch (error) {
    if (!interrupt.signal.aborted) {
      throw error;
    }
    view.end();
    return { interrupted: await cancelAfterInterrupt(client, call, request.call_id) };
  } finally {
    view.end();
    io.interrupt?.removeEventListener("abort", onInterrupt);
    process.off("SIGINT", onInterrupt);
  }
}
