// The bridge's HTTP answers written as they come: backpressure from a slow client, on a real socket.
import { once } from "node:events";
import { createServer, type ServerResponse } from "node:http";
import { type AddressInfo, connect } from "node:net";
import { afterEach, expect, it } from "vitest";
import { writeWebResponse } from "../src/internal/web-response.js";

const closers: (() => Promise<void>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) {
    await close();
  }
});

it("leaves no listener behind on the response, however often a slow client fills the socket", async () => {
  const CHUNKS = 64;
  const chunk = new Uint8Array(256 * 1024).fill(97);
  let written: { res: ServerResponse; drain: number; close: number } | undefined;
  const server = createServer((_req, res) => {
    let sent = 0;
    const body = new ReadableStream<Uint8Array>({
      pull(controller) {
        if (sent++ === CHUNKS) {
          controller.close();
        } else {
          controller.enqueue(chunk);
        }
      },
    });
    void writeWebResponse(res, new Response(body), new AbortController().signal).then(() => {
      written = { res, drain: res.listenerCount("drain"), close: res.listenerCount("close") };
    });
  });
  server.listen(0, "127.0.0.1");
  await once(server, "listening");
  closers.push(() => new Promise((resolve) => server.close(() => resolve())));

  // A client that reads in small sips, so that the server's buffer fills again and again.
  const socket = connect((server.address() as AddressInfo).port, "127.0.0.1");
  closers.push(async () => void socket.destroy());
  socket.write("GET / HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n");
  let received = 0;
  socket.on("data", (data: Buffer) => {
    received += data.length;
    socket.pause();
    setTimeout(() => socket.resume(), 1);
  });
  await once(socket, "end");

  expect(received).toBeGreaterThan(CHUNKS * chunk.length);
  // node:http's own listeners only: the one `close` it keeps, no `drain` of ours.
  expect(written?.drain).toBe(0);
  expect(written?.close).toBeLessThanOrEqual(1);
}, 30_000);
