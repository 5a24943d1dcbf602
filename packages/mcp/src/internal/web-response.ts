/** A web-standard Response written to node:http as it comes, with backpressure: the bridge's HTTP answers. */
import { once } from "node:events";
import type { ServerResponse } from "node:http";

/**
 * Writes a web-standard Response to node:http, chunk by chunk as the SDK produces it (SSE events go out
 * as they come), waiting for the socket to drain; stops reading when `signal` fires (the client left).
 */
export async function writeWebResponse(res: ServerResponse, response: Response, signal: AbortSignal): Promise<void> {
  response.headers.forEach((value, name) => {
    res.setHeader(name, value);
  });
  res.writeHead(response.status);
  if (!response.body) {
    res.end();
    return;
  }
  res.flushHeaders();
  const reader = response.body.getReader();
  const stop = () => void reader.cancel(signal.reason).catch(() => undefined);
  signal.addEventListener("abort", stop, { once: true });
  try {
    for (;;) {
      const { done, value } = await reader.read();
      if (done || signal.aborted) {
        break;
      }
      if (!res.write(value)) {
        await drainedOrClosed(res);
      }
    }
  } finally {
    signal.removeEventListener("abort", stop);
  }
  res.end();
}

/**
 * Waits for the socket to drain or close, whichever comes first, and then takes both listeners off: a long event
 * stream to a slow client goes through this once per full buffer, and left on, the loser's listeners piled up.
 */
async function drainedOrClosed(res: ServerResponse): Promise<void> {
  const settled = new AbortController();
  const waits = [once(res, "drain", { signal: settled.signal }), once(res, "close", { signal: settled.signal })];
  try {
    await Promise.race(waits);
  } finally {
    settled.abort();
    // The one that lost rejects with an AbortError nobody awaits.
    for (const wait of waits) {
      wait.catch(() => undefined);
    }
  }
}
