/** inspectorPage(), the fetch form, called with Request objects: every behaviour handler.test.ts checks of the node form, then inside the servers and bundled for a neutral platform. */
import { fileURLToPath } from "node:url";
import { gunzipSync } from "node:zlib";
import { createHandler, createServer, listen } from "@otc/server";
import { bundleWithoutNode } from "@otc/test-helpers/bundle";
import { openapiDocument } from "@otc/types";
import { describe, expect, it } from "vitest";
import { type InspectorFiles, inspectorPage, readInspectorFiles } from "../src/index.js";
import { referenceServer } from "./reference-server.js";

const ORIGIN = "http://127.0.0.1:1234";
const files = readInspectorFiles();
if (!files) {
  throw new Error("@otc/inspector is not built: run `npm run build` in packages/inspector");
}
const page = inspectorPage({ files: () => files });

/** The page's answer to a GET (or `init`) of `path`, which it must not pass on. */
async function answer(path: string, init: RequestInit = {}, servedBy = page): Promise<Response> {
  const response = await servedBy(new Request(`${ORIGIN}${path}`, init));
  if (!response) {
    throw new Error(`the page passed on ${init.method ?? "GET"} ${path}`);
  }
  return response;
}

/** The `src` and `href` of the page's scripts and stylesheets, as written. */
const assetUrls = (html: string) =>
  [...html.matchAll(/(?:src|href)="([^"]+\/assets\/[^"]+)"/g)].map((m) => m[1] as string);

/** The paths the page's asset URLs lead to from `pageUrl`, as a browser resolves them. */
const resolvedAssets = (html: string, pageUrl: string) => assetUrls(html).map((url) => new URL(url, pageUrl).pathname);

const policyOf = (response: Response) =>
  Object.fromEntries(
    (response.headers.get("content-security-policy") ?? "").split(/;\s*/).map((directive) => {
      const [name = "", ...values] = directive.split(/\s+/);
      return [name, values.join(" ")];
    }),
  );

const expectPassedOn = async (path: string, init: RequestInit = {}) =>
  expect(await page(new Request(`${ORIGIN}${path}`, init)), path).toBeUndefined();

describe("inspectorPage()", () => {
  it("serves the page at /inspector with its policy, no-cache and nosniff, its links relative to the path", async () => {
    for (const path of ["/inspector", "/inspector/"]) {
      const response = await answer(path);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      expect(response.headers.get("x-content-type-options")).toBe("nosniff");
      expect(response.headers.get("x-frame-options")).toBe("DENY");
      expect(response.headers.get("referrer-policy")).toBe("no-referrer");
      expect(response.headers.get("cross-origin-opener-policy")).toBe("same-origin-allow-popups");
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
        expect(url).toMatch(/^\.\.?\/inspector\/assets\//);
      }
      for (const url of resolvedAssets(html, `${ORIGIN}${path}`)) {
        expect(url).toMatch(/^\/inspector\/assets\/[\w.-]+-[\w-]{8}\.(js|css)$/);
      }
    }
  });

  it("serves every asset of the page with its type, a year of immutable caching, gzipped when asked", async () => {
    const html = await (await answer("/inspector")).text();
    for (const path of resolvedAssets(html, `${ORIGIN}/inspector`)) {
      const plain = await answer(path, { headers: { "accept-encoding": "identity" } });
      expect(plain.status).toBe(200);
      expect(plain.headers.get("content-type")).toMatch(path.endsWith(".js") ? /^text\/javascript/ : /^text\/css/);
      expect(plain.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(plain.headers.get("x-content-type-options")).toBe("nosniff");
      expect(plain.headers.get("content-encoding")).toBeNull();
      expect(plain.headers.get("vary")).toBe("Accept-Encoding");
      const body = Buffer.from(await plain.arrayBuffer());
      expect(plain.headers.get("content-length")).toBe(String(body.length));
      const gzipped = await answer(path, { headers: { "accept-encoding": "gzip, br" } });
      expect(gzipped.headers.get("vary")).toBe("Accept-Encoding");
      if (body.length > 1024) {
        expect(gzipped.headers.get("content-encoding")).toBe("gzip");
        const bytes = Buffer.from(await gzipped.arrayBuffer());
        expect(gzipped.headers.get("content-length")).toBe(String(bytes.length));
        expect(gunzipSync(bytes).equals(body)).toBe(true);
      }
    }
  });

  it("lets the page call the server its ?url= names, and only a real http(s) origin", async () => {
    const named = await answer(`/inspector?url=${encodeURIComponent("http://tools.example:8080/base")}`);
    expect(policyOf(named)["connect-src"]).toBe("'self' http://tools.example:8080");
    for (const hostile of ["javascript:alert(1)", "http://a.example; script-src *", "data:text/html,x", "nonsense"]) {
      const policy = policyOf(await answer(`/inspector?url=${encodeURIComponent(hostile)}`));
      expect(policy["connect-src"], hostile).toMatch(/^'self'( http:\/\/[\w.%-]+(:\d+)?)?$/);
      expect(policy["script-src"]).toBe("'self' 'unsafe-eval'");
    }
  });

  it("serves /docs: Scalar from the package, the project's OpenAPI document, nothing from elsewhere", async () => {
    for (const path of ["/docs", "/docs/"]) {
      const response = await answer(path);
      expect(response.status).toBe(200);
      expect(response.headers.get("content-type")).toBe("text/html; charset=utf-8");
      expect(response.headers.get("cache-control")).toBe("no-cache");
      const policy = policyOf(response);
      expect(policy["script-src"]).toBe("'self'");
      expect(policy["style-src"]).toBe("'self' 'unsafe-inline'");
      expect(policy["connect-src"]).toBe("'self'");
      const html = await response.text();
      expect(html).not.toMatch(/https?:\/\//);
      const paths = resolvedAssets(html, `${ORIGIN}${path}`);
      expect(paths.map((url) => url.replace(/-[0-9a-f]{12}\./, "."))).toEqual([
        "/docs/assets/docs.css",
        "/docs/assets/scalar.js",
        "/docs/assets/init.js",
      ]);
      const config = JSON.parse(
        /<script id="docs-config" type="application\/json">(.*?)<\/script>/.exec(html)?.[1] ?? "",
      );
      expect(new URL(config.url, `${ORIGIN}${path}`).pathname).toBe("/docs/openapi.json");
      const init = await (await answer(paths[2] ?? "")).text();
      expect(referenceServer(html, init, `${ORIGIN}${path}`)).toBe(ORIGIN);
    }
    const html = await (await answer("/docs")).text();
    const paths = resolvedAssets(html, `${ORIGIN}/docs`);
    for (const path of paths) {
      const asset = await answer(path);
      expect(asset.status).toBe(200);
      expect(asset.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(policyOf(asset)["script-src"]).toBe("'self'");
    }
    const scalar = await (await answer(paths[1] ?? "")).text();
    expect(scalar).toContain("createApiReference");
    expect(scalar).not.toContain("sourceMappingURL");
    const document = await answer("/docs/openapi.json");
    expect(document.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(document.headers.get("cache-control")).toBe("no-cache");
    expect(document.headers.get("content-security-policy")).toBe("default-src 'none'; frame-ancestors 'none'");
    expect(await document.json()).toEqual(JSON.parse(JSON.stringify(openapiDocument)));
  });

  it("passes on what it does not serve, and answers other methods with a JSON 405", async () => {
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
      "/tools",
    ]) {
      await expectPassedOn(path);
    }
    for (const method of ["POST", "PUT", "DELETE", "OPTIONS"]) {
      const refused = await answer(
        "/inspector",
        method === "POST" || method === "PUT" ? { method, body: "{}" } : { method },
      );
      expect(refused.status, method).toBe(405);
      expect(refused.headers.get("allow")).toBe("GET, HEAD");
      expect(refused.headers.get("content-type")).toBe("application/json; charset=utf-8");
      expect(refused.headers.get("cache-control")).toBe("no-store");
      expect(refused.headers.get("x-content-type-options")).toBe("nosniff");
      expect(await refused.json()).toEqual({ message: "This method is not allowed here" });
    }
    // Another method on a path it does not serve is not its business either.
    await expectPassedOn("/tools", { method: "POST", body: "{}" });
  });

  it("writes only a plain scheme, host and port of ?url= into the policy: no wildcard, no new directive", async () => {
    const directives = (await answer("/inspector")).headers.get("content-security-policy");
    const names = (directives ?? "").split("; ").map((directive) => directive.split(" ")[0]);
    for (const hostile of [
      "http://*",
      "http://*.example.com:8080",
      "http://a;sandbox",
      "https://a.example;script-src",
      "http://a.example,b.example",
      "http://a'unsafe-inline'",
    ]) {
      const response = await answer(`/inspector?url=${encodeURIComponent(hostile)}`);
      const header = response.headers.get("content-security-policy") ?? "";
      expect(policyOf(response)["connect-src"], hostile).toBe("'self'");
      expect(
        header.split("; ").map((directive) => directive.split(" ")[0]),
        hostile,
      ).toEqual(names);
      expect(header, hostile).not.toMatch(/\*|sandbox|,/);
      expect(await response.text()).toContain('"connectOrigins":[]');
    }
    for (const [good, origin] of [
      ["http://[::1]:8080/oxp", "http://[::1]:8080"],
      ["https://tools-1.example.com", "https://tools-1.example.com"],
      ["http://bücher.example:81/", "http://xn--bcher-kva.example:81"],
    ]) {
      const response = await answer(`/inspector?url=${encodeURIComponent(good as string)}`);
      expect(policyOf(response)["connect-src"]).toBe(`'self' ${origin}`);
    }
  });

  it("serves no page for a path starting with //, and its relative links never name another host", async () => {
    for (const path of ["//evil.example/inspector", "//evil.example/docs"]) {
      await expectPassedOn(path);
    }
    // Below any prefix, even one starting with //, a relative link stays on the page's own origin.
    const html = await (await answer("/inspector")).text();
    for (const url of assetUrls(html)) {
      expect(new URL(url, "http://127.0.0.1:1234//evil.example/oxp/inspector").host).toBe("127.0.0.1:1234");
    }
  });

  it("refuses the build's manifest by its decoded name too", async () => {
    for (const path of [
      "/docs/assets/manifest%2Ejson",
      "/docs/assets/manifest%2ejson",
      "/docs/assets/%6Danifest.json",
    ]) {
      await expectPassedOn(path);
    }
  });

  it("gzips only when Accept-Encoding prefers it: q=0 refuses, * with q above 0 accepts, identity can win", async () => {
    const html = await (await answer("/inspector")).text();
    const script = resolvedAssets(html, `${ORIGIN}/inspector`).find((url) => url.endsWith(".js")) as string;
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
      const response = await answer(script, { headers: { "accept-encoding": accept } });
      expect(response.status).toBe(200);
      expect(response.headers.get("content-encoding"), accept).toBe(gzipped ? "gzip" : null);
    }
  });

  it("answers HEAD with the headers of GET and no body", async () => {
    for (const path of ["/docs/openapi.json", "/inspector", "/docs"]) {
      for (const accept of ["identity", "gzip"]) {
        const headers = { "accept-encoding": accept };
        const get = await answer(path, { headers });
        const head = await answer(path, { method: "HEAD", headers });
        expect(head.status).toBe(200);
        expect([...head.headers]).toEqual([...get.headers]);
        expect(head.body).toBeNull();
      }
    }
  });
});

describe("inspectorPage() options and mounting", () => {
  it("presets the server the page connects to and lets it call that origin", async () => {
    const preset = inspectorPage({ serverUrl: "https://tools.example.com/oxp", files: () => files });
    const response = await answer("/inspector", {}, preset);
    expect(policyOf(response)["connect-src"]).toBe("'self' https://tools.example.com");
    const html = await response.text();
    const config = JSON.parse(
      /<script id="inspector-config" type="application\/json">(.*?)<\/script>/.exec(html)?.[1] ?? "",
    );
    expect(config).toEqual({
      serverUrl: "https://tools.example.com/oxp",
      connectOrigins: ["https://tools.example.com"],
    });
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
      expect(() => inspectorPage({ serverUrl: bad, files: () => files }), bad).toThrow(TypeError);
    }
    expect(() => inspectorPage({ serverUrl: "http://127.0.0.1:8080/oxp", files: () => files })).not.toThrow();
  });

  it("points the pages' URLs below the prefix it is mounted under, which it is not told", async () => {
    // The server is mounted at /oxp: the browser asks for /oxp/inspector, the page sees /inspector.
    for (const [seen, asked] of [
      ["/inspector", `${ORIGIN}/oxp/inspector`],
      ["/inspector/", `${ORIGIN}/oxp/inspector/`],
      ["/docs", `${ORIGIN}/oxp/docs`],
      ["/docs/", `${ORIGIN}/oxp/docs/`],
    ] as const) {
      const html = await (await answer(seen)).text();
      const section = seen.startsWith("/inspector") ? "inspector" : "docs";
      for (const url of resolvedAssets(html, asked)) {
        expect(url.startsWith(`/oxp/${section}/assets/`), url).toBe(true);
      }
      for (const url of resolvedAssets(html, asked)) {
        expect((await answer(url.slice(4))).status).toBe(200);
      }
    }
    for (const path of ["/docs", "/docs/"]) {
      const docs = await (await answer(path)).text();
      const config = JSON.parse(
        /<script id="docs-config" type="application\/json">(.*?)<\/script>/.exec(docs)?.[1] ?? "",
      );
      expect(new URL(config.url, `${ORIGIN}/oxp${path}`).pathname).toBe("/oxp/docs/openapi.json");
      // The reference's "This server", where its requests go: the server below the prefix, not the origin's root.
      const init = resolvedAssets(docs, `${ORIGIN}/oxp${path}`).find((url) => /\/init-[\w-]+\.js$/.test(url)) ?? "";
      const script = await (await answer(init.slice("/oxp".length))).text();
      expect(referenceServer(docs, script, `${ORIGIN}/oxp${path}`)).toBe(`${ORIGIN}/oxp`);
    }
  });

  it("answers a 503 in JSON while the package is not built, and serves it once it is, asking again each time", async () => {
    let built: InspectorFiles | undefined;
    let asked = 0;
    const later = inspectorPage({
      files: async () => {
        asked++;
        return built;
      },
    });
    const unbuilt = await answer("/inspector", {}, later);
    expect(unbuilt.status).toBe(503);
    expect(unbuilt.headers.get("content-type")).toBe("application/json; charset=utf-8");
    expect(((await unbuilt.json()) as { message: string }).message).toMatch(/not built/);
    expect(await later(new Request(`${ORIGIN}/elsewhere`))).toBeUndefined();
    expect(asked).toBe(1);
    built = files;
    expect((await answer("/inspector", {}, later)).status).toBe(200);
    expect((await answer("/docs", {}, later)).status).toBe(200);
    expect(asked).toBe(2);
  });

  it("serves files given as text, as a worker bundles them, and only those below ui/assets and docs", async () => {
    const bundled = inspectorPage({
      files: () => ({
        "ui/index.html": '<html><head><script src="./assets/app-1.js"></script></head><body></body></html>',
        "ui/assets/app-1.js": "console.log(1);",
        "ui/assets/app-1.js.map": "{}",
        "ui/other/secret.txt": "no",
        "docs/manifest.json": JSON.stringify({ scalar: "scalar-1.js", init: "init-1.js", style: "docs-1.css" }),
        "docs/scalar-1.js": "window.Scalar = {};",
      }),
    });
    const html = await (await answer("/inspector", {}, bundled)).text();
    expect(assetUrls(html)).toEqual(["./inspector/assets/app-1.js"]);
    const script = await answer("/inspector/assets/app-1.js", {}, bundled);
    expect(script.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
    expect(await script.text()).toBe("console.log(1);");
    expect((await answer("/docs/assets/scalar-1.js", {}, bundled)).status).toBe(200);
    for (const path of ["/inspector/assets/app-1.js.map", "/inspector/assets/secret.txt", "/docs/assets/init-1.js"]) {
      expect(await bundled(new Request(`${ORIGIN}${path}`)), path).toBeUndefined();
    }
  });

  it("throws what reading the build throws, for the server to answer, and reads it again on the next request", async () => {
    let calls = 0;
    const failing = inspectorPage({
      files: () => {
        calls++;
        if (calls === 1) {
          throw new Error("disk on fire");
        }
        return files;
      },
    });
    await expect(failing(new Request(`${ORIGIN}/inspector`))).rejects.toThrow("disk on fire");
    expect((await answer("/inspector", {}, failing)).status).toBe(200);
  });
});

describe("inspectorPage() inside the servers", () => {
  it("is one of createServer's and createHandler's pages: served without authentication, the server answers the rest", async () => {
    const options = { tools: [], logger: false, auth: { apiKeys: ["k-123"] }, pages: [page] } as const;
    const express = await listen(createServer(options), { port: 0 });
    const node = await listen(createHandler(options), { port: 0 });
    try {
      for (const running of [express, node]) {
        const response = await fetch(`${running.url}/inspector`);
        expect(response.status).toBe(200);
        expect(response.headers.get("oxp-version")).toBe("1.0");
        expect(response.headers.get("content-security-policy")).toContain("default-src 'none'");
        for (const asset of resolvedAssets(await response.text(), `${running.url}/inspector`)) {
          expect((await fetch(`${running.url}${asset}`)).status).toBe(200);
        }
        expect((await fetch(`${running.url}/docs/openapi.json`)).status).toBe(200);
        expect((await fetch(`${running.url}/inspector/assets/missing.js`)).status).toBe(401);
        const unknown = await fetch(`${running.url}/nothing`, { headers: { "OXP-API-Key": "k-123" } });
        expect(unknown.status).toBe(404);
        expect(await unknown.json()).toMatchObject({ message: "Not found" });
      }
    } finally {
      await express.close();
      await node.close();
    }
  });

  it("keeps Accept-Encoding in Vary beside the server's CORS Vary: Origin", async () => {
    const options = { tools: [], logger: false, cors: { origins: ["http://app.example"] }, pages: [page] } as const;
    const running = await listen(createHandler(options), { port: 0 });
    try {
      const headers = { Origin: "http://app.example" };
      for (const path of ["/inspector", "/docs", "/docs/openapi.json"]) {
        const response = await fetch(`${running.url}${path}`, { headers });
        expect(response.status, path).toBe(200);
        expect(response.headers.get("access-control-allow-origin"), path).toBe("http://app.example");
        const vary = (response.headers.get("vary") ?? "").split(/\s*,\s*/).map((field) => field.toLowerCase());
        expect(vary, path).toEqual(expect.arrayContaining(["origin", "accept-encoding"]));
      }
    } finally {
      await running.close();
    }
  });
});

describe("runtime neutrality", () => {
  it("bundles the fetch entry for a neutral platform (workerd's conditions) without any Node built-in", async () => {
    const code = await bundleWithoutNode(fileURLToPath(new URL("../src/fetch.ts", import.meta.url)));
    expect(code).toContain("inspectorPage");
    expect(code).not.toMatch(/\bBuffer\b|\bprocess\./);
  });
});
