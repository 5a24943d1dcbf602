/** An asynchronous call as it runs (the tasks extension): its progress bar, how the page follows it, and its Cancel button. */

import type { FollowMode } from "@otc/client";
import type { CallProgress } from "@otc/types";

/** Where an asynchronous call stands, as the page knows it. */
export type TaskPhase = "starting" | "running" | "cancelling" | "completed" | "cancelled" | "lost";

/** What the page shows of an asynchronous call. */
export interface TaskState {
  callId: string;
  phase: TaskPhase;
  progress?: CallProgress;
  mode?: FollowMode;
  /** Why the page polls instead of reading the event stream. */
  why?: string;
  /** Why the last Cancel did not go through. */
  cancelError?: string;
}

/** The most of a progress message the page shows (servers cut theirs at 1,000 characters; a hostile one may not). */
const MAX_MESSAGE = 1_000;

const PHASES: Record<TaskPhase, string> = {
  starting: "Starting the call asynchronously…",
  running: "Running",
  cancelling: "Cancelling…",
  completed: "Completed",
  cancelled: "Cancelled",
  lost: "The page lost track of the call: it may still be running on the server",
};

/** A number as the page shows it: finite ones only. */
const shown = (value: number) => (Number.isFinite(value) ? String(value) : "?");

export function TaskView(props: { task: TaskState; onCancel: () => void }) {
  const { task } = props;
  const progress = task.progress;
  const total = progress?.total;
  // A bar needs a positive total; without one it is indeterminate (no value), the count written beside it.
  const bounded = progress && total !== undefined && Number.isFinite(total) && total > 0;
  const ended = task.phase === "completed" || task.phase === "cancelled" || task.phase === "lost";
  const message = progress?.message;
  let following = "";
  if (task.mode === "events") {
    following = " · following its event stream";
  } else if (task.mode === "polling") {
    following = ` · polling its status${task.why ? ` (${task.why})` : ""}`;
  }
  return (
    <section className={`task ${task.phase}`} aria-label="Asynchronous call">
      <p role="status" aria-label="Call status" className="task-status">
        {PHASES[task.phase]}
      </p>
      <p className="meta">
        call_id <code>{task.callId}</code>
        {ended ? "" : following}
      </p>
      {bounded && (
        <progress
          aria-label="Progress"
          aria-describedby="task-progress-text"
          max={total}
          value={Math.min(Math.max(progress.progress, 0), total)}
        />
      )}
      {!bounded && !ended && <progress aria-label="Progress" aria-describedby="task-progress-text" />}
      <p id="task-progress-text" className="progress-text" aria-live="off">
        {progress
          ? `${shown(progress.progress)}${total !== undefined ? ` of ${shown(total)}` : ""}`
          : "No progress reported yet"}
        {message ? ` · ${message.slice(0, MAX_MESSAGE)}` : ""}
      </p>
      {!ended && (
        <button type="button" className="danger" onClick={props.onCancel} disabled={task.phase !== "running"}>
          {task.phase === "cancelling" ? "Cancelling…" : "Cancel"}
        </button>
      )}
      {task.cancelError && <p className="bad">Cancel failed: {task.cancelError}</p>}
    </section>
  );
}
