// docs/protocol.md 7, [limits.allowed-hosts]: DNS-rebinding protection, the Host names a server answers to, over real loopback sockets.
import { once } from "node:events";
import { request as httpRequest } from "node:http";
import { connect } from "node:net";
import { verifies } from "@otc/test-helpers/verifies";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createServer } from "../src/index.js";
import { expectSchema, type Running, startServer, type TestServerOptions } from "./harness.js";

/** A request with the given Host header (or none), read whole. */
function withHost(
  baseUrl: string,
  host: string,
  path = "/health",
): Promise<{ status: number; headers: Record<string, unknown>; body: string }> {
  const { port } = new URL(baseUrl);
  return new Promise((resolve, reject) => {
    const req = httpRequest({ host: "127.0.0.1", port, path, agent: false, headers: { host } }, (res) => {
      let body = "";
      res.setEncoding("utf8");
      res.on("data", (chunk: string) => {
        body += chunk;
      });
      res.on("end", () => resolve({ status: res.statusCode ?? 0, headers: res.headers, body }));
    });
    req.on("error", reject);
    req.end();
  });
}

/** Asserts the answer is the JSON 400 a foreign Host gets, with OXP-Version and the Host cut as quoted strings are. */
function expectRefused(answer: { status: number; headers: Record<string, unknown>; body: string }): void {
  expect(answer.status, answer.body).toBe(400);
  expect(answer.headers["oxp-version"]).toBe("1.0");
  expect(answer.headers["content-type"]).toMatch(/^application\/json/);
  const body = JSON.parse(answer.body);
  expectSchema("ServerErrorResponse", body);
  expect(body.message).toBe("The request's Host does not name this server");
}

describe("a server on loopback, by default", () => {
  let server: Running;
  let port: string;
  beforeAll(async () => {
    server = await startServer();
    port = new URL(server.baseUrl).port;
  });
  afterAll(() => server.close());

  verifies.each([
    "evil.example:8080",
    "evil.example",
    "EVIL.example.",
    "localhost.evil.example",
    "127.0.0.1.nip.io",
    "localhost:80@evil.example",
    "[::1",
  ])("limits.allowed-hosts", "refuses Host %s with a JSON 400, on every route", async (host) => {
    expectRefused(await withHost(server.baseUrl, host));
    expectRefused(await withHost(server.baseUrl, host, "/tools"));
    expectRefused(await withHost(server.baseUrl, host, "/no-such-page"));
  });

  verifies.each([
    "127.0.0.1:{port}",
    "localhost:{port}",
    "localhost",
    "LOCALHOST:{port}",
    "localhost.:{port}",
    "app.localhost:{port}",
    "[::1]:{port}",
    "127.0.0.2",
    "192.0.2.7:8080",
  ])("limits.allowed-hosts", "serves Host %s: loopback names and IP addresses cannot be rebound", async (template) => {
    const reply = await withHost(server.baseUrl, template.replace("{port}", port));
    expect(reply.status, reply.body).toBe(200);
  });

  verifies("limits.quoted-strings", "quotes a refused Host cut to 64 characters", async () => {
    const host = `${"a".repeat(5_000)}.example`;
    const answer = await withHost(server.baseUrl, host);
    expectRefused(answer);
    expect(answer.body.length).toBeLessThan(400);
    expect(JSON.parse(answer.body).developer_message).toContain(`'${"a".repeat(64)}...(4944 more characters)'`);
  });

  verifies("limits.allowed-hosts", "checks each request of a keep-alive connection", async () => {
    const socket = connect(Number(port), "127.0.0.1");
    await once(socket, "connect");
    socket.write(
      `GET /health HTTP/1.1\r\nHost: localhost:${port}\r\n\r\nGET /health HTTP/1.1\r\nHost: evil.example\r\nConnection: close\r\n\r\n`,
    );
    let answer = "";
    socket.setEncoding("latin1");
    for await (const chunk of socket) {
      answer += chunk;
    }
    expect([...answer.matchAll(/HTTP\/1\.1 (\d{3}) /g)].map((match) => match[1])).toEqual(["200", "400"]);
  });
});

describe("the allowedHosts option", () => {
  const servers: Running[] = [];
  afterAll(() => Promise.all(servers.map((server) => server.close())));
  const start = async (options: TestServerOptions) => {
    const server = await startServer(options);
    servers.push(server);
    return server;
  };

  verifies("limits.allowed-hosts", '"any" serves every Host', async () => {
    const server = await start({ allowedHosts: "any" });
    for (const host of ["evil.example:8080", "anything.at.all"]) {
      expect((await withHost(server.baseUrl, host)).status).toBe(200);
    }
  });

  verifies("limits.allowed-hosts", "a list adds names, and a leading dot a domain with its subdomains", async () => {
    const server = await start({ allowedHosts: ["tools.example.com", ".example.org"] });
    for (const host of [
      "tools.example.com",
      "Tools.Example.com:8443",
      "example.org",
      "a.b.example.org:1",
      "localhost",
    ]) {
      expect((await withHost(server.baseUrl, host)).status, host).toBe(200);
    }
    for (const host of ["example.com", "evil.example", "notexample.org", "tools.example.com.evil.example"]) {
      expectRefused(await withHost(server.baseUrl, host));
    }
  });

  verifies("limits.allowed-hosts", "serves publicUrl's host, the name a proxy in front forwards", async () => {
    const server = await start({ publicUrl: "https://tools.example.net/base" });
    expect((await withHost(server.baseUrl, "tools.example.net")).status).toBe(200);
    expectRefused(await withHost(server.baseUrl, "other.example.net"));
  });

  it("refuses entries that are not host names at start-up", () => {
    for (const allowedHosts of [["https://tools.example.com"], ["tools.example.com:8080"], ["*.example.com"], [""]]) {
      expect(() => createServer({ tools: [], logger: false, allowedHosts })).toThrow(/allowedHosts/);
    }
  });
});
