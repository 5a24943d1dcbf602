/** An error boundary: a part of the page that fails while rendering shows its fallback, the rest keeps working. */
import { Component, type ErrorInfo, type ReactNode } from "react";

/** The most of an error's message the page shows: a server's schema can make it as long as it likes. */
const MAX_MESSAGE = 300;

/** What a render error says, for the page: the message of an Error, else the value as text, cut short. */
export function messageOf(error: unknown): string {
  let text: string;
  try {
    text = error instanceof Error ? error.message : String(error);
  } catch {
    text = "an error that cannot be shown";
  }
  return text.length > MAX_MESSAGE ? `${text.slice(0, MAX_MESSAGE)}…` : text;
}

interface Props {
  /** What to show instead of the children once one of them threw while rendering. */
  fallback: (error: unknown) => ReactNode;
  children: ReactNode;
}

/**
 * Catches what its children throw while rendering (a form built from a schema a server sent, say) and shows
 * `fallback` in their place. Without one, React unmounts the whole page on such an error: a blank page.
 * Give it a `key` that changes with what it shows (a tool's id) so that the next one starts afresh.
 */
export class ErrorBoundary extends Component<Props, { failed: boolean; error: unknown }> {
  override state = { failed: false, error: undefined as unknown };

  static getDerivedStateFromError(error: unknown) {
    return { failed: true, error };
  }

  override componentDidCatch(error: unknown, info: ErrorInfo): void {
    // The page shows the message; the console keeps the stack for whoever debugs the server's schema.
    // biome-ignore lint/suspicious/noConsole: in the browser the console is where a page reports its faults to the developer
    console.error("The Inspector caught a render error:", error, info.componentStack);
  }

  override render(): ReactNode {
    return this.state.failed ? this.props.fallback(this.state.error) : this.props.children;
  }
}
