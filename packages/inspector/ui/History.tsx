/** The session's calls, newest first: outcome, duration, and the raw HTTP request and response with credentials masked. */
import type { Exchange } from "./session.js";

/** The most exchanges one entry keeps: an asynchronous call followed by long polls for an hour makes thousands. */
export const MAX_EXCHANGES = 50;

/** One call of the session. */
export interface HistoryEntry {
  id: string;
  toolId: string;
  callId: string;
  at: Date;
  durationMs: number;
  summary: string;
  exchanges: Exchange[];
  /** Exchanges past {@link MAX_EXCHANGES}, counted and not kept. */
  omittedExchanges?: number;
}

const headerLines = (headers: [string, string][]) => headers.map(([name, value]) => `${name}: ${value}`).join("\n");

function rawRequest(exchange: Exchange): string {
  const head = `${exchange.method} ${exchange.url}\n${headerLines(exchange.requestHeaders)}`;
  return exchange.requestBody ? `${head}\n\n${exchange.requestBody}` : head;
}

function rawResponse(exchange: Exchange): string {
  if (exchange.status === 0) {
    return `(no answer) ${exchange.responseBody}`;
  }
  return `HTTP ${exchange.status}\n${headerLines(exchange.responseHeaders)}\n\n${exchange.responseBody}`;
}

export function HistoryView({ entries }: { entries: HistoryEntry[] }) {
  return (
    <section className="history" aria-labelledby="history-title">
      <h2 id="history-title">History</h2>
      {entries.length === 0 && <p className="empty">No calls yet in this session.</p>}
      <ol aria-label="Calls">
        {entries.map((entry) => (
          <li key={entry.id}>
            <details>
              <summary>
                <span className="time">{entry.at.toLocaleTimeString()}</span> <strong>{entry.toolId}</strong>{" "}
                <span className="summary">{entry.summary}</span>{" "}
                <span className="duration">{Math.round(entry.durationMs)} ms</span>
              </summary>
              <p>
                call_id <code>{entry.callId}</code>
              </p>
              {entry.exchanges.map((exchange, index) => (
                // Exchanges of one entry never reorder: the index is a stable key.
                // biome-ignore lint/suspicious/noArrayIndexKey: see above
                <div className="exchange" key={index}>
                  <h3>Request</h3>
                  <section aria-label="Raw request">
                    <pre>{rawRequest(exchange)}</pre>
                  </section>
                  <h3>Response ({Math.round(exchange.durationMs)} ms)</h3>
                  <section aria-label="Raw response">
                    <pre>{rawResponse(exchange)}</pre>
                  </section>
                </div>
              ))}
              {entry.omittedExchanges ? (
                <p className="empty">
                  {entry.omittedExchanges} later request{entry.omittedExchanges === 1 ? "" : "s"} not kept (the history
                  keeps the first {MAX_EXCHANGES} of a call)
                </p>
              ) : null}
            </details>
          </li>
        ))}
      </ol>
    </section>
  );
}
