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

/**
 * Answers 200 with the start of a tool list and then `bytes` of spaces, written as fast as the client reads
 * them and never held whole; `written` is told how far it got. For clients that must stop reading at their limit.
 */
export async function endlessToolList(res: ServerResponse, bytes: number, written: (total: number) => void) {
  res.writeHead(200, { "content-type": "application/json" });
  const chunk = Buffer.alloc(64 * 1024, 0x20);
  res.write('{"items": [');
  let total = 0;
  while (total < bytes && !res.destroyed) {
    total += chunk.length;
    written(total);
    if (!res.write(chunk)) {
      await writable(res);
    }
  }
  res.end();
}
