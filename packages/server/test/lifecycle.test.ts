// docs/protocol.md 1 and 7 in process: /health while starting, and a graceful shutdown that finishes calls in flight.
import { once } from "node:events";
import { connect } from "node:net";
import { until } from "@otc/test-helpers/until";
import { verifies } from "@otc/test-helpers/verifies";
import { describe, expect } from "vitest";
import { callTool, send, startServer } from "./harness.js";

describe("start-up", () => {
  verifies("endpoints.health", "answers 503 on /health until the server is warm, then 200", async () => {
    const server = await startServer();
    try {
      server.app.oxp.lifecycle.ready = false;
      const starting = await send(`${server.baseUrl}/health`);
      expect(starting.status).toBe(503);
      expect(starting.body).toEqual({ message: "The server is starting" });
      server.app.oxp.lifecycle.ready = true;
      expect((await send(`${server.baseUrl}/health`)).status).toBe(200);
    } finally {
      await server.close();
    }
  });
});

describe("graceful shutdown in process", () => {
  verifies(
    ["endpoints.health", "limits.graceful-drain"],
    "answers 503 on /health once draining, refuses new connections, finishes calls in flight",
    async () => {
      const server = await startServer();
      const inFlight = callTool(server.baseUrl, { tool_id: "System.Sleep", input: { ms: 400 } });
      await until(() => server.app.oxp.lifecycle.inFlight > 0, { what: "the call to be in flight" });

      // A request whose headers are half sent is in progress: draining does not cut it.
      const { port, hostname } = new URL(server.baseUrl);
      const socket = connect(Number(port), hostname);
      await once(socket, "connect");
      socket.write(`GET /health HTTP/1.1\r\nHost: ${hostname}\r\n`);
      // real time: a turn of the event loop (which this test shares with the server) for it to read what loopback
      // already holds; nothing tells that the server has half a request.
      await new Promise((resolve) => setTimeout(resolve, 30));

      // Draining starts within close(): the rest of the headers arrive after it.
      const closed = server.close();
      let answer = "";
      socket.on("data", (chunk) => {
        answer += chunk;
      });
      socket.write("\r\n");
      await once(socket, "close");
      expect(answer).toMatch(/^HTTP\/1\.1 503/);
      expect(answer).toMatch(/oxp-version: 1\.0/i);

      await expect(send(`${server.baseUrl}/health`)).rejects.toThrow();
      const finished = await inFlight;
      expect(finished.body).toMatchObject({ success: true, value: { slept_ms: 400 } });
      await closed;
    },
  );
});
