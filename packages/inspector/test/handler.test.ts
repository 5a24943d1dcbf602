/** The inspector() handler on a plain node:http server and inside @otc/server's createServer and createHandler (as `nodePages`): routes, headers, caching, policy, errors. */
import { mkdtemp, rm } from "node:fs/promises";
import { createServer as createHttpServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { createHandler, createServer, listen } from "@otc/server";
import { openapiDocument } from "@otc/types";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type InspectorHandler, inspector } from "../src/index.js";
import { referenceServer } from "./reference-server.js";

interface Running {
  url: string;
  close(): Promise<void>;
}

/** A plain node server whose only handler is `handler`; `prefix` is stripped as Express does when mounting. */
async function serve(handler: InspectorHandler, prefix = ""): Promise<Running> {
  const server: Server = createHttpServer((req: IncomingMessage, res: ServerResponse) => {
    if (prefix && req.url?.startsWith(prefix)) {
      Object.assign(req, { originalUrl: req.url });
      req.url = req.url.slice(prefix.length) || "/";
    }
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    close: () => new Promise((resolve) => server.close(() => resolve())),
  };
}

/** The `src` and `href` of the page's scripts and stylesheets. */
const assetUrls = (html: string) =>
  [...html.matchAll(/(?:src|href)="([^"]+\/assets\/[^"]+)"/g)].map((m) => m[1] as string);

/** A GET sent with node:http, which (unlike fetch) shows the bytes and the request target as sent. */
function rawGet(
  url: string,
  headers: Record<string, string> = {},
  path?: string,
): Promise<{ status: number; encoding: string | undefined; bytes: Buffer }> {
  const target = new URL(url);
  return new Promise((resolve, reject) => {
    import("node:http").then(({ get }) =>
      get(
        { host: target.hostname, port: target.port, path: path ?? `${target.pathname}${target.search}`, headers },
        (res) => {
          const chunks: Buffer[] = [];
          res.on("data", (chunk: Buffer) => chunks.push(chunk));
          res.on("end", () =>
            resolve({
              status: res.statusCode ?? 0,
              encoding: res.headers["content-encoding"],
              bytes: Buffer.concat(chunks),
            }),
          );
        },
      ).on("error", reject),
    );
  });
}

const policyOf = (response: Response) =>
  Object.fromEntries(
    (response.headers.get("content-security-policy") ?? "").split(/;\s*/).map((directive) => {
      const [name = "", ...values] = directive.split(/\s+/);
      return [name, values.join(" ")];
    }),
  );

describe("on a plain node:http server", () => {
  let plain: Running;
  beforeAll(async () => {
    plain = await serve(inspector());
  });
  afterAll(() => plain.close());

  it("serves the page at /inspector with its policy, no-cache and nosniff", async () => {
    for (const path of ["/inspector", "/inspector/"]) {
      const response = await fetch(`${plain.url}${path}`);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      const policy = policyOf(response);
      expect(policy["default-src"]).toBe("'none'");
      expect(policy["script-src"]).toBe("'self' 'unsafe-eval'");
      expect(policy["style-src"]).toBe("'self'");
      expect(policy["connect-src"]).toBe("'self'");
      expect(policy["frame-ancestors"]).toBe("'none'");
      const html = await response.text();
      expect(html).toContain('<div id="root">');
      expect(html).toContain('<script id="inspector-config" type="application/json">');
      expect(assetUrls(html).length).toBeGreaterThanOrEqual(2);
      for (const url of assetUrls(html)) {
        expect(url).toMatch(/^\/inspector\/assets\/[\w.-]+-[\w-]{8}\.(js|css)$/);
      }
    }
  });

  it("serves every asset of the page with its type, a year of immutable caching, gzipped when asked", async () => {
    const html = await (await fetch(`${plain.url}/inspector`)).text();
    for (const url of assetUrls(html)) {
      const plainAnswer = await fetch(`${plain.url}${url}`, { headers: { "accept-encoding": "identity" } });
      expect(plainAnswer.status).toBe(200);
      expect(plainAnswer.headers.get("content-type")).toMatch(url.endsWith(".js") ? /^text\/javascript/ : /^text\/css/);
      expect(plainAnswer.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(plainAnswer.headers.get("x-content-type-options")).toBe("nosniff");
      expect(plainAnswer.headers.get("content-encoding")).toBeNull();
      const body = Buffer.from(await plainAnswer.arrayBuffer());
      // fetch would decode gzip itself: node:http shows the bytes as sent.
      const gzipped = await new Promise<{ encoding: string | undefined; bytes: Buffer }>((resolve, reject) => {
        import("node:http").then(({ get }) =>
          get(`${plain.url}${url}`, { headers: { "accept-encoding": "gzip, br" } }, (res) => {
            const chunks: Buffer[] = [];
            res.on("data", (chunk: Buffer) => chunks.push(chunk));
            res.on("end", () => resolve({ encoding: res.headers["content-encoding"], bytes: Buffer.concat(chunks) }));
          }).on("error", reject),
        );
      });
      if (body.length > 1024) {
        expect(gzipped.encoding).toBe("gzip");
        expect(gunzipSync(gzipped.bytes).equals(body)).toBe(true);
      }
    }
  });

  it("lets the page call the server its ?url= names, and only a real http(s) origin", async () => {
    const named = await fetch(`${plain.url}/inspector?url=${encodeURIComponent("http://tools.example:8080/base")}`);
    expect(policyOf(named)["connect-src"]).toBe("'self' http://tools.example:8080");
    for (const hostile of ["javascript:alert(1)", "http://a.example; script-src *", "data:text/html,x", "nonsense"]) {
      const response = await fetch(`${plain.url}/inspector?url=${encodeURIComponent(hostile)}`);
      const policy = policyOf(response);
      expect(policy["connect-src"], hostile).toMatch(/^'self'( http:\/\/[\w.%-]+(:\d+)?)?$/);
      expect(policy["script-src"]).toBe("'self' 'unsafe-eval'");
    }
  });

  it("lets the page call the authorization server its ?auth= names (its Sign in), held to the same origins as ?url=", async () => {
    const both = await fetch(
      `${plain.url}/inspector?url=${encodeURIComponent("http://tools.example:8080")}&auth=${encodeURIComponent("https://login.example/tenant")}`,
    );
    expect(policyOf(both)["connect-src"]).toBe("'self' http://tools.example:8080 https://login.example");
    expect(await both.text()).toContain('"connectOrigins":["http://tools.example:8080","https://login.example"]');
    for (const hostile of ["http://*", "http://a;sandbox", "javascript:alert(1)", "https://a.example,b.example"]) {
      const response = await fetch(`${plain.url}/inspector?auth=${encodeURIComponent(hostile)}`);
      expect(policyOf(response)["connect-src"], hostile).toBe("'self'");
    }
  });

  it("serves /docs: Scalar from the package, the project's OpenAPI document, nothing from elsewhere", async () => {
    const response = await fetch(`${plain.url}/docs`);
    expect(response.status).toBe(200);
    expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
    const policy = policyOf(response);
    expect(policy["script-src"]).toBe("'self'");
    expect(policy["connect-src"]).toBe("'self'");
    const html = await response.text();
    expect(html).not.toMatch(/https?:\/\//);
    const urls = assetUrls(html);
    expect(urls.map((url) => url.replace(/-[0-9a-f]{12}\./, "."))).toEqual([
      "/docs/assets/docs.css",
      "/docs/assets/scalar.js",
      "/docs/assets/init.js",
    ]);
    for (const url of urls) {
      const asset = await fetch(`${plain.url}${url}`);
      expect(asset.status).toBe(200);
      expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
    }
    const scalar = await (await fetch(`${plain.url}${urls[1]}`)).text();
    expect(scalar).toContain("createApiReference");
    expect(scalar).not.toContain("sourceMappingURL");
    const document = await fetch(`${plain.url}/docs/openapi.json`);
    expect(document.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(await document.json()).toEqual(JSON.parse(JSON.stringify(openapiDocument)));
  });

  it("answers what it does not serve with a JSON 404, and other methods with a JSON 405", async () => {
    for (const path of [
      "/",
      "/inspectors",
      "/inspector/assets/",
      "/inspector/assets/nope.js",
      "/inspector/assets/..%2Findex.html",
      "/inspector/assets/%2e%2e%2f%2e%2e%2fpackage.json",
      "/docs/assets/manifest.json",
      "/docs/assets/%E0%A4%A",
      "/inspector/index.html",
    ]) {
      const response = await fetch(`${plain.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(response.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(await response.json()).toEqual({ message: "Not found" });
    }
    const post = await fetch(`${plain.url}/inspector`, { method: "POST", body: "{}" });
    expect(post.status).toBe(405);
    expect(post.headers.get("allow")).toBe("GET, HEAD");
    expect(await post.json()).toEqual({ message: "This method is not allowed here" });
  });

  it("writes only a plain scheme, host and port of ?url= into the policy: no wildcard, no new directive", async () => {
    const directives = (await fetch(`${plain.url}/inspector`)).headers.get("content-security-policy");
    const names = (directives ?? "").split("; ").map((directive) => directive.split(" ")[0]);
    for (const hostile of [
      "http://*",
      "http://*.example.com:8080",
      "http://a;sandbox",
      "https://a.example;script-src",
      "http://a.example,b.example",
      "http://a'unsafe-inline'",
    ]) {
      const response = await fetch(`${plain.url}/inspector?url=${encodeURIComponent(hostile)}`);
      const header = response.headers.get("content-security-policy") ?? "";
      expect(policyOf(response)["connect-src"], hostile).toBe("'self'");
      expect(
        header.split("; ").map((directive) => directive.split(" ")[0]),
        hostile,
      ).toEqual(names);
      expect(header, hostile).not.toMatch(/\*|sandbox|,/);
      const html = await response.text();
      expect(html).toContain('"connectOrigins":[]');
    }
    for (const [good, origin] of [
      ["http://[::1]:8080/oxp", "http://[::1]:8080"],
      ["https://tools-1.example.com", "https://tools-1.example.com"],
      ["http://bücher.example:81/", "http://xn--bcher-kva.example:81"],
    ]) {
      const response = await fetch(`${plain.url}/inspector?url=${encodeURIComponent(good as string)}`);
      expect(policyOf(response)["connect-src"]).toBe(`'self' ${origin}`);
    }
  });

  it("serves no page for a path starting with //, so no script is loaded from another host", async () => {
    for (const path of ["//evil.example/inspector", "//evil.example/docs", "/\\evil.example/inspector"]) {
      const response = await rawGet(`${plain.url}/`, {}, path);
      expect(response.status, path).toBe(404);
      expect(response.bytes.toString(), path).not.toMatch(/(src|href)="[^"]*evil/);
    }
    // The absolute form of a request target names a host: only its path counts.
    const absolute = await rawGet(`${plain.url}/`, {}, "http://evil.example/inspector");
    expect(absolute.status).toBe(200);
    const html = absolute.bytes.toString();
    expect(html).not.toContain("evil.example");
    expect(assetUrls(html).length).toBeGreaterThanOrEqual(2);
    for (const url of assetUrls(html)) {
      expect(url).toMatch(/^\/inspector\/assets\//);
    }
  });

  it("refuses the build's manifest by its decoded name too", async () => {
    for (const path of [
      "/docs/assets/manifest%2Ejson",
      "/docs/assets/manifest%2ejson",
      "/docs/assets/%6Danifest.json",
    ]) {
      const response = await fetch(`${plain.url}${path}`);
      expect(response.status, path).toBe(404);
      expect(await response.json()).toEqual({ message: "Not found" });
    }
  });

  it("gzips only when Accept-Encoding prefers it: q=0 refuses, * with q above 0 accepts, identity can win", async () => {
    const html = await (await fetch(`${plain.url}/inspector`)).text();
    const script = assetUrls(html).find((url) => url.endsWith(".js")) as string;
    for (const [accept, gzipped] of [
      ["gzip;q=0", false],
      ["gzip; q=0.0, deflate", false],
      ["gzip;q=0, *", false],
      ["*;q=0", false],
      ["identity", false],
      ["br, gzip;q=0.5", true],
      ["GZIP", true],
      ["*;q=0.1", true],
      ["x-gzip", true],
      ["gzip;q=0, x-gzip", true],
      ["x-gzip;q=0, *", false],
      // The client would rather have the file as is.
      ["gzip;q=0.5, identity", false],
      ["identity;q=0.1, gzip;q=0.2", true],
    ] as const) {
      const answer = await rawGet(`${plain.url}${script}`, { "accept-encoding": accept });
      expect(answer.status).toBe(200);
      expect(answer.encoding, accept).toBe(gzipped ? "gzip" : undefined);
    }
  });

  it("answers HEAD with the headers of GET and no body", async () => {
    const get = await fetch(`${plain.url}/docs/openapi.json`, { headers: { "accept-encoding": "identity" } });
    const head = await fetch(`${plain.url}/docs/openapi.json`, {
      method: "HEAD",
      headers: { "accept-encoding": "identity" },
    });
    expect(head.status).toBe(200);
    expect(head.headers.get("content-length")).toBe(get.headers.get("content-length"));
    expect(await head.text()).toBe("");
  });
});

describe("options and mounting", () => {
  it("presets the server the page connects to and lets it call that origin", async () => {
    const running = await serve(inspector({ serverUrl: "https://tools.example.com/oxp" }));
    try {
      const response = await fetch(`${running.url}/inspector`);
      expect(policyOf(response)["connect-src"]).toBe("'self' https://tools.example.com");
      const html = await response.text();
      const config = JSON.parse(
        /<script id="inspector-config" type="application\/json">(.*?)<\/script>/.exec(html)?.[1] ?? "",
      );
      expect(config).toEqual({
        serverUrl: "https://tools.example.com/oxp",
        connectOrigins: ["https://tools.example.com"],
      });
    } finally {
      await running.close();
    }
  });

  it("refuses at construction a serverUrl it could not write into the policy", () => {
    for (const bad of [
      "http://*",
      "http://a;sandbox",
      "http://a,b",
      "http://a'b",
      "ftp://tools.example",
      "/oxp",
      "nonsense",
    ]) {
      expect(() => inspector({ serverUrl: bad }), bad).toThrow(TypeError);
    }
    expect(() => inspector({ serverUrl: "http://127.0.0.1:8080/oxp" })).not.toThrow();
  });

  it("serves no page when the path it is mounted under starts with //", async () => {
    // What Express hands a middleware mounted at /oxp for `//evil.example/oxp/inspector`.
    const server: Server = createHttpServer((req, res) => {
      Object.assign(req, { originalUrl: req.url });
      req.url = (req.url ?? "/").replace(/^.*?\/oxp(?=\/)/, "");
      inspector()(req, res);
    });
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      for (const path of [
        "//evil.example/oxp/inspector",
        "//evil.example/oxp/docs",
        "http://evil.example//evil.example/oxp/docs",
      ]) {
        const response = await rawGet(url, {}, path);
        expect(response.status, path).toBe(404);
        expect(response.bytes.toString(), path).not.toMatch(/(src|href)="[^"]*evil/);
      }
      const mounted = await rawGet(url, {}, "/oxp/inspector");
      expect(mounted.status).toBe(200);
      for (const asset of assetUrls(mounted.bytes.toString())) {
        expect(asset).toMatch(/^\/oxp\/inspector\/assets\//);
      }
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("points the pages' URLs below the prefix it is mounted under", async () => {
    const running = await serve(inspector(), "/oxp");
    try {
      const page = await (await fetch(`${running.url}/oxp/inspector`)).text();
      for (const url of assetUrls(page)) {
        expect(url.startsWith("/oxp/inspector/assets/")).toBe(true);
      }
      const docs = await (await fetch(`${running.url}/oxp/docs`)).text();
      for (const url of assetUrls(docs)) {
        expect(url.startsWith("/oxp/docs/assets/")).toBe(true);
      }
      expect(docs).toContain('"url":"/oxp/docs/openapi.json"');
      const init = assetUrls(docs).find((url) => /\/init-[\w-]+\.js$/.test(url)) ?? "";
      const script = await (await fetch(`${running.url}${init}`)).text();
      expect(referenceServer(docs, script, `${running.url}/oxp/docs`)).toBe(`${running.url}/oxp`);
      expect((await fetch(`${running.url}/oxp${assetUrls(page)[0]?.slice(4)}`)).status).toBe(200);
    } finally {
      await running.close();
    }
  });

  it("answers a 503 in JSON, not a crash, when the package was not built", async () => {
    const empty = await mkdtemp(join(tmpdir(), "inspector-unbuilt-"));
    const running = await serve(inspector({ distDir: empty }));
    try {
      const response = await fetch(`${running.url}/inspector`);
      expect(response.status).toBe(503);
      expect(((await response.json()) as { message: string }).message).toMatch(/not built/);
      expect((await fetch(`${running.url}/elsewhere`)).status).toBe(404);
    } finally {
      await running.close();
      await rm(empty, { recursive: true, force: true });
    }
  });

  it("inside createServer (Express), loads nothing from the host a // path or an absolute target names", async () => {
    const running = await listen(createServer({ tools: [], logger: false, nodePages: [inspector()] }), { port: 0 });
    try {
      for (const path of ["//evil.example/inspector", "//evil.example/docs"]) {
        const response = await rawGet(running.url, {}, path);
        expect(response.status, path).toBe(404);
        expect(response.bytes.toString(), path).not.toMatch(/(src|href)="[^"]*evil/);
      }
      for (const path of ["http://evil.example/inspector", "http://evil.example/docs"]) {
        const response = await rawGet(running.url, {}, path);
        const html = response.bytes.toString();
        expect(html, path).not.toContain("evil.example");
        expect(assetUrls(html).length, path).toBeGreaterThanOrEqual(2);
        for (const url of assetUrls(html)) {
          expect(url, path).toMatch(/^\/(inspector|docs)\/assets\//);
        }
      }
    } finally {
      await running.close();
    }
  });

  it("is one of createHandler's pages on plain node:http", async () => {
    const handler = createHandler({ tools: [], logger: false, auth: { apiKeys: ["k-123"] }, nodePages: [inspector()] });
    const server: Server = createHttpServer(handler);
    await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
    const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    try {
      const page = await fetch(`${url}/inspector`);
      expect(page.status).toBe(200);
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
      for (const asset of assetUrls(await page.text())) {
        expect((await fetch(`${url}${asset}`)).status).toBe(200);
      }
      expect((await fetch(`${url}/docs/openapi.json`)).status).toBe(200);
      expect((await fetch(`${url}/tools`, { headers: { "OXP-Version": "1.0" } })).status).toBe(401);
    } finally {
      await new Promise((resolve) => server.close(resolve));
    }
  });

  it("adds Accept-Encoding to the Vary: Origin of the server's CORS, on both adapters, rather than replacing it", async () => {
    const options = { tools: [], logger: false, cors: { origins: ["http://app.example"] } } as const;
    const express = await listen(createServer({ ...options, nodePages: [inspector()] }), { port: 0 });
    const node = await listen(createHandler({ ...options, nodePages: [inspector()] }), { port: 0 });
    try {
      for (const running of [express, node]) {
        const page = await fetch(`${running.url}/inspector`, { headers: { Origin: "http://app.example" } });
        const script = assetUrls(await page.text()).find((url) => url.endsWith(".js")) as string;
        for (const path of ["/inspector", script, "/docs", "/docs/openapi.json"]) {
          const response = await fetch(`${running.url}${path}`, { headers: { Origin: "http://app.example" } });
          expect(response.status, path).toBe(200);
          expect(response.headers.get("access-control-allow-origin"), path).toBe("http://app.example");
          const vary = (response.headers.get("vary") ?? "").split(/\s*,\s*/).map((field) => field.toLowerCase());
          expect(vary, path).toEqual(expect.arrayContaining(["origin", "accept-encoding"]));
        }
      }
    } finally {
      await express.close();
      await node.close();
    }
  });

  it("is one of createServer's pages: served without authentication, and the server answers the rest", async () => {
    const app = createServer({ tools: [], logger: false, auth: { apiKeys: ["k-123"] }, nodePages: [inspector()] });
    const running = await listen(app, { port: 0 });
    try {
      const page = await fetch(`${running.url}/inspector`);
      expect(page.status).toBe(200);
      expect(page.headers.get("oxp-version")).toBe("1.0");
      expect(page.headers.get("content-security-policy")).toContain("default-src 'none'");
      const docs = await fetch(`${running.url}/docs/openapi.json`);
      expect(docs.status).toBe(200);
      // next(): the server's own JSON 404 and its authentication for everything else.
      const missing = await fetch(`${running.url}/inspector/assets/missing.js`);
      expect(missing.status).toBe(401);
      const tools = await fetch(`${running.url}/tools`, { headers: { "OXP-API-Key": "k-123", "OXP-Version": "1.0" } });
      expect(tools.status).toBe(200);
      const unknown = await fetch(`${running.url}/nothing`, { headers: { "OXP-API-Key": "k-123" } });
      expect(unknown.status).toBe(404);
      expect(await unknown.json()).toMatchObject({ message: "Not found" });
    } finally {
      await running.close();
    }
  });
});
