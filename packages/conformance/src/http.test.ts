// The kit's HTTP against a hostile server on loopback: an answer past the size bound fails the request, and a body cut into many pieces is read in one pass.
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { afterEach, describe, expect, it } from "vitest";
import { Http } from "./http.js";

let server: Server | undefined;
afterEach(async () => {
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** Serves `write` for every request on 127.0.0.1, port 0; resolves with the base URL. */
async function serve(write: (res: import("node:http").ServerResponse) => void): Promise<string> {
  server = createServer((_req, res) => write(res));
  await new Promise<void>((resolve) => server?.listen(0, "127.0.0.1", resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
}

/** Writes `pieces` one after another, each once the socket has taken the last, then ends. */
async function writeAll(res: import("node:http").ServerResponse, pieces: Iterable<string>): Promise<void> {
  for (const piece of pieces) {
    if (res.destroyed) {
      return;
    }
    if (!res.write(piece)) {
      await new Promise((resolve) => res.once("drain", resolve));
    }
  }
  res.end();
}

function* repeat(piece: string, times: number) {
  for (let i = 0; i < times; i++) {
    yield piece;
  }
}

describe("Http", () => {
  it("fails a request whose answer passes the size bound, and stops reading it", async () => {
    let written = 0;
    const url = await serve((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      // Endless: only the client hanging up ends it.
      void writeAll(
        res,
        (function* () {
          for (;;) {
            written += 64 * 1024;
            yield ":".padEnd(64 * 1024, "x");
          }
        })(),
      );
    });
    const http = new Http(url, async () => ({}), 60_000, 1024 * 1024);
    await expect(http.send({ path: "/events" })).rejects.toThrow(
      /GET \/events: the answer is longer than 1048576 bytes/,
    );
    expect(written).toBeLessThan(64 * 1024 * 1024);
  });

  it("hands `until` each piece once: a 4 MiB line in 4 KiB pieces is read in one pass, then its event", async () => {
    const line = `:${"x".repeat(4 * 1024 * 1024)}\n\n`;
    const url = await serve((res) => {
      res.writeHead(200, { "content-type": "text/event-stream" });
      const pieces = Array.from({ length: Math.ceil(line.length / 4096) }, (_, i) =>
        line.slice(i * 4096, (i + 1) * 4096),
      );
      void writeAll(res, [...pieces, "data: 1\n\n"]);
    });
    let handed = 0;
    const answer = await new Http(url, async () => ({})).send({
      path: "/events",
      until: (piece) => {
        handed += piece.length;
        return piece.includes("data: 1");
      },
    });
    // The whole text once (the old reader handed the text so far with every piece: 2 GiB for this stream).
    expect(handed).toBe(answer.text.length);
    expect(answer.text.startsWith(line)).toBe(true);
    expect(answer.text.endsWith("data: 1\n\n")).toBe(true);
  });

  it("reads an answer within the bound whole", async () => {
    const url = await serve((res) => {
      res.writeHead(200, { "content-type": "application/json" });
      void writeAll(res, ["[", ...repeat('"abc",', 1000), '"é"]']);
    });
    const answer = await new Http(url, async () => ({})).send({ path: "/tools" });
    expect(answer.json).toHaveLength(1001);
    expect((answer.json as string[])[1000]).toBe("é");
  });
});
