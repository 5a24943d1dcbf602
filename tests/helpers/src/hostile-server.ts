/** Small pieces of the hostile servers that client-side tests stand up on loopback (a CLI, a bridge or a client facing a server it must not trust). */
import type { ServerResponse } from "node:http";

/** Resolves once `res` takes more (drain) or never will (close): for streaming an endless answer without buffering it. */
export function writable(res: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      res.off("drain", done).off("close", done);
      resolve();
    };
    res.on("drain", done).on("close", done);
  });
}

/** Answers `status` with `body` as JSON, and nothing else (no OXP-Version: a hostile server sends what it likes). */
export const json = (res: ServerResponse, status: number, body: unknown) =>
  res.writeHead(status, { "content-type": "application/json" }).end(JSON.stringify(body));
