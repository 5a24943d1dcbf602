// What only the node:http adapter has: node-style pages (an Express router among them) beside the protocol routes, body limits as sizes.
import { header, receive } from "@otc/test-helpers/raw-http";
import { verifies } from "@otc/test-helpers/verifies";
import express from "express";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createHandler, createServer, listen, type PageHandler, type RunningServer } from "../src/index.js";
import { callTool, expectError, expectHealthy, send } from "./harness.js";
import { testTools } from "./tools.js";

const hello: PageHandler = (req, res, next) => {
  if (req.url !== "/hello") {
    return next();
  }
  res.writeHead(200, { "Content-Type": "text/plain" });
  res.end("hello");
};
const broken: PageHandler = (req, _res, next) => {
  if (req.url === "/broken") {
    throw new Error("a page bug with a /secret/path.ts:12 in it");
  }
  next();
};
const router = express.Router({ caseSensitive: true });
router.get("/express/page", (_req, res) => {
  res.type("text/html").send("<p>from express</p>");
});
router.post("/express/form", express.urlencoded({ extended: false, limit: "1kb" }), (req, res) => {
  res.json({ got: (req.body as { field?: string }).field });
});
const expressPages = express().use(router);

let running: RunningServer;
let keyed: RunningServer;

beforeAll(async () => {
  const pages: PageHandler[] = [
    hello,
    broken,
    (req, res, next) => expressPages(req as express.Request, res as express.Response, next),
  ];
  [running, keyed] = await Promise.all([
    listen(createHandler({ tools: testTools(), logger: false, nodePages: pages, bodyLimit: "2kb" }), { port: 0 }),
    listen(
      createHandler({
        tools: testTools(),
        logger: false,
        nodePages: pages,
        auth: { apiKeys: ["node-key-0123456789"] },
      }),
      {
        port: 0,
      },
    ),
  ]);
});
afterAll(() => Promise.all([running.close(), keyed.close()]));

describe("pages on the node:http adapter", () => {
  verifies(
    "endpoints.oxp-version-header",
    "serves node pages and Express routers beside the protocol, without server authentication",
    async () => {
      for (const server of [running, keyed]) {
        const plain = await send(`${server.url}/hello`);
        expect(plain.status).toBe(200);
        expect(plain.text).toBe("hello");
        expect(plain.headers.get("oxp-version")).toBe("1.0");
        const page = await send(`${server.url}/express/page`);
        expect(page.text).toBe("<p>from express</p>");
        const form = await send(`${server.url}/express/form`, {
          method: "POST",
          headers: { "content-type": "application/x-www-form-urlencoded" },
          body: "field=value",
        });
        expect(form.body).toEqual({ got: "value" });
      }
      // Protocol routes and unknown paths stay behind authentication.
      expectError(await send(`${keyed.url}/tools`), 401);
      expectError(await send(`${keyed.url}/nowhere`), 401);
      expectError(await send(`${running.url}/nowhere`), 404);
    },
  );

  verifies(
    ["endpoints.error-json", "limits.client-error-json"],
    "answers a page's thrown or passed-on errors in JSON, without the error's text",
    async () => {
      const thrown = await send(`${running.url}/broken`);
      expectError(thrown, 500);
      expect(thrown.text).not.toContain("secret");
      const tooBig = await send(`${running.url}/express/form`, {
        method: "POST",
        headers: { "content-type": "application/x-www-form-urlencoded" },
        body: `field=${"x".repeat(2_000)}`,
      });
      expectError(tooBig, 413);
      await expectHealthy(running.url);
    },
  );
});

describe("requests the node:http adapter parses itself", () => {
  verifies("call.body-checks", "takes its body limit as a size, and refuses what is past it with a 413", async () => {
    const reply = await callTool(running.url, {
      tool_id: "Calculator.Add",
      input: { a: 1, b: 2, pad: "x".repeat(3_000) },
    });
    expectError(reply, 413);
    const small = await callTool(running.url, { tool_id: "Calculator.Add", input: { a: 1, b: 2 } });
    expect(small.body).toMatchObject({ success: true, value: 3 });
  });

  verifies(
    "endpoints.unknown-route",
    "routes an absolute-form request target by its path, and answers a target it cannot route with a 404",
    async () => {
      const { port } = new URL(running.url);
      const absolute = await receive(
        Number(port),
        Buffer.from(
          `GET http://127.0.0.1:${port}/tools?x=1 HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`,
        ),
        false,
      );
      expect(absolute.status).toBe(200);
      const asterisk = await receive(
        Number(port),
        Buffer.from(`OPTIONS * HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nConnection: close\r\n\r\n`),
        false,
      );
      expect(asterisk.status).toBe(404);
      expect(header(asterisk, "oxp-version")).toBe("1.0");
    },
  );
});

describe("listen's warm-up", () => {
  /** How many requests reach `app` while `listen` starts it. */
  async function requestsDuringListen(app: ReturnType<typeof createHandler> | ReturnType<typeof createServer>) {
    let count = 0;
    const counted = Object.assign(
      (req: Parameters<typeof app>[0], res: Parameters<typeof app>[1]) => {
        count++;
        app(req as never, res as never);
      },
      { oxp: app.oxp },
    );
    const running = await listen(counted, { port: 0 });
    const seen = count;
    await running.close();
    return seen;
  }

  it("sends a first request only to an app that compiles on its first (Express's validator), never to the node:http one", async () => {
    expect(await requestsDuringListen(createHandler({ tools: testTools(), logger: false }))).toBe(0);
    expect(await requestsDuringListen(createServer({ tools: testTools(), logger: false }))).toBe(1);
  });
});
