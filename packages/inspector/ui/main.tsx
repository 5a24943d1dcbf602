/** The Inspector page's entry: mounts the React app, behind a last-resort error boundary. */
import { StrictMode } from "react";
import { createRoot } from "react-dom/client";
import { App } from "./App.js";
import { ErrorBoundary, messageOf } from "./error-boundary.js";
import "./styles.css";

/** What the page shows if the app itself fails to render: a message, not a blank page. */
function PageError({ error }: { error: unknown }) {
  return (
    <div className="app">
      <header>
        <h1>OXP Inspector</h1>
      </header>
      <p role="alert" className="bad">
        The Inspector failed: {messageOf(error)}. Reload the page to start again.
      </p>
    </div>
  );
}

const root = document.getElementById("root");
if (root) {
  createRoot(root).render(
    <StrictMode>
      <ErrorBoundary fallback={(error) => <PageError error={error} />}>
        <App />
      </ErrorBoundary>
    </StrictMode>,
  );
}
