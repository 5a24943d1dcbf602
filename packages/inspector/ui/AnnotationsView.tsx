/** A tool's annotations as the page shows them (its hints, stated or by default, and its deprecation), and the confirmation asked before a destructive call. */
import type { ToolDefinition } from "@otc/types";
import { useEffect, useRef } from "react";
import { deprecationOf, type Hint, hintsOf, titleOf } from "./annotations.js";

const describeHint = (hint: Hint) => `${hint.value ? "yes" : "no"}${hint.stated ? "" : " (default)"}`;

/** The deprecation notice of a tool the server says is deprecated, with what to use instead. */
export function Deprecation({ tool }: { tool: ToolDefinition }) {
  const message = deprecationOf(tool);
  if (!message) {
    return null;
  }
  return (
    <p role="note" aria-label="Deprecation" className="deprecated">
      <strong>Deprecated:</strong> {message}
    </p>
  );
}

/** The tool's four hints; for a read-only tool, destructive and idempotent are moot (docs/protocol.md 9.2). */
export function AnnotationsView({ tool }: { tool: ToolDefinition }) {
  const hints = hintsOf(tool);
  const readOnly = hints.readOnly.value;
  return (
    <>
      <h3>Annotations</h3>
      <section aria-label="Annotations">
        <dl>
          <dt>Title</dt>
          <dd>{titleOf(tool) ?? "(none)"}</dd>
          <dt>Read-only</dt>
          <dd>{describeHint(hints.readOnly)}</dd>
          <dt>Destructive</dt>
          <dd>{readOnly ? "no: read-only" : describeHint(hints.destructive)}</dd>
          <dt>Idempotent</dt>
          <dd>{readOnly ? "moot: read-only" : describeHint(hints.idempotent)}</dd>
          <dt>Open world</dt>
          <dd>{describeHint(hints.openWorld)}</dd>
        </dl>
      </section>
      <p className="hint">
        Hints the server gives, not guarantees. A hint it leaves out takes the protocol's default: not read-only,
        destructive, not idempotent, open world.
      </p>
    </>
  );
}

/**
 * Asks before a destructive call: says why the tool counts as destructive (its own word, or the protocol's default
 * for a tool that does not say it is read-only or only adds). "Don't call" has the focus: Enter does not call.
 */
export function ConfirmCall(props: { tool: ToolDefinition; onConfirm: () => void; onDismiss: () => void }) {
  const { tool } = props;
  const dismiss = useRef<HTMLButtonElement>(null);
  useEffect(() => dismiss.current?.focus(), []);
  const stated = hintsOf(tool).destructive.stated;
  return (
    <div role="alertdialog" aria-labelledby="confirm-title" aria-describedby="confirm-why" className="confirm">
      <p id="confirm-title">
        <strong>Call {titleOf(tool) ?? tool.id}?</strong>
      </p>
      <p id="confirm-why">
        {stated
          ? "The server says this tool is destructive: it may delete or overwrite."
          : "The server does not say this tool is read-only, nor that it only adds: the protocol then counts it as destructive (it may delete or overwrite)."}
      </p>
      <button type="button" className="primary danger" onClick={props.onConfirm}>
        Call it
      </button>
      <button type="button" ref={dismiss} onClick={props.onDismiss}>
        Don't call
      </button>
    </div>
  );
}
