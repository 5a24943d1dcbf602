/** The pages are built and gzipped once per variant (the prefix they are mounted under, `?url=`), not per request, in both forms; the cache is bounded. */
import { createServer as createHttpServer, get, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, beforeEach, describe, expect, it, vi } from "vitest";
import { inspector, inspectorPage, readInspectorFiles } from "../src/index.js";

// The real CompressionStream, counted: how many times the handler compresses is what this file checks.
const compressions = { calls: 0 };
const RealCompressionStream = globalThis.CompressionStream;
vi.stubGlobal(
  "CompressionStream",
  class extends RealCompressionStream {
    constructor(format: ConstructorParameters<typeof RealCompressionStream>[0]) {
      super(format);
      compressions.calls++;
    }
  },
);

/** A gzipped GET: the status, the encoding and the decoded body. */
function gzipGet(url: string): Promise<{ status: number; encoding: string | undefined; body: string }> {
  return new Promise((resolve, reject) => {
    get(url, { headers: { "accept-encoding": "gzip" } }, (res) => {
      const chunks: Buffer[] = [];
      res.on("data", (chunk: Buffer) => chunks.push(chunk));
      res.on("end", () => {
        const bytes = Buffer.concat(chunks);
        const encoding = res.headers["content-encoding"];
        resolve({
          status: res.statusCode ?? 0,
          encoding,
          body: (encoding === "gzip" ? gunzipSync(bytes) : bytes).toString(),
        });
      });
    }).on("error", reject);
  });
}

let server: Server;
let origin: string;

beforeAll(async () => {
  const handler = inspector();
  // Mounted as Express mounts a router at `/tenants/:tenant`: each tenant's prefix is another variant of the pages.
  server = createHttpServer((req, res) => {
    Object.assign(req, { originalUrl: req.url });
    req.url = (req.url ?? "/").replace(/^\/tenants\/[^/]+/, "");
    handler(req, res);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  origin = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});

afterAll(() => new Promise((resolve) => server.close(resolve)));

beforeEach(() => {
  compressions.calls = 0;
});

/** A tenant's prefix long enough that its pages pass the size from which they are gzipped. */
const tenant = (name: string) => `/tenants/${name}-${"t".repeat(700)}`;

describe("the page cache", () => {
  it("gzips each page of one prefix once, however often it is asked for", async () => {
    for (const section of ["inspector", "docs"]) {
      const before = compressions.calls;
      const page = `${origin}${tenant("one")}/${section}`;
      const first = await gzipGet(page);
      expect(first.status).toBe(200);
      expect(first.encoding).toBe("gzip");
      expect(first.body).toContain(`${tenant("one")}/${section}/assets/`);
      for (let i = 0; i < 4; i++) {
        expect(await gzipGet(page)).toEqual(first);
      }
      expect(compressions.calls - before, section).toBe(1);
    }
    // Another prefix is another page, gzipped once in turn.
    const other = await gzipGet(`${origin}${tenant("two")}/inspector`);
    expect(other.body).toContain(`${tenant("two")}/inspector/assets/`);
    expect(other.body).not.toContain(tenant("one"));
    await gzipGet(`${origin}${tenant("two")}/inspector`);
    expect(compressions.calls).toBe(3);
  });

  it("keeps a bounded number of variants: an evicted one is built again, and right", async () => {
    const page = (n: number) => `${origin}${tenant(`v${n}`)}/inspector`;
    await gzipGet(page(0));
    for (let n = 1; n <= 100; n++) {
      await gzipGet(page(n));
    }
    expect(compressions.calls).toBe(101);
    const again = await gzipGet(page(0));
    expect(again.body).toContain(`${tenant("v0")}/inspector/assets/`);
    expect(compressions.calls).toBe(102);
    // The most recent one is still cached.
    await gzipGet(page(100));
    expect(compressions.calls).toBe(102);
  });
});

describe("the fetch page's cache", () => {
  const page = inspectorPage({ files: readInspectorFiles });
  /** A gzipped GET of the page: the encoding and the decoded body. */
  const fetchGzipped = async (url: string) => {
    const response = await page(new Request(url, { headers: { "accept-encoding": "gzip" } }));
    if (!response) {
      throw new Error(`passed on ${url}`);
    }
    const bytes = Buffer.from(await response.arrayBuffer());
    const encoding = response.headers.get("content-encoding");
    return { status: response.status, encoding, body: (encoding === "gzip" ? gunzipSync(bytes) : bytes).toString() };
  };
  /** The page opened with a `?url=` long enough that it passes the size from which it is gzipped. */
  const variant = (name: string) =>
    `http://127.0.0.1:1234/inspector?url=${encodeURIComponent(`http://${name}-${"h".repeat(700)}.example`)}`;

  it("gzips the page of one variant once, however often it is asked for, also while the first is compressing", async () => {
    const first = await Promise.all([fetchGzipped(variant("one")), fetchGzipped(variant("one"))]);
    expect(first[0]).toEqual(first[1]);
    expect(first[0]).toMatchObject({ status: 200, encoding: "gzip" });
    expect(first[0].body).toContain(`one-${"h".repeat(700)}.example`);
    for (let i = 0; i < 4; i++) {
      expect(await fetchGzipped(variant("one"))).toEqual(first[0]);
    }
    expect(compressions.calls).toBe(1);
    expect((await fetchGzipped(variant("two"))).body).toContain("two-");
    expect(compressions.calls).toBe(2);
  });

  it("keeps a bounded number of variants: an evicted one is built again, and right", async () => {
    await fetchGzipped(variant("v0"));
    for (let n = 1; n <= 100; n++) {
      await fetchGzipped(variant(`v${n}`));
    }
    expect(compressions.calls).toBe(101);
    expect((await fetchGzipped(variant("v0"))).body).toContain(`v0-${"h".repeat(700)}.example`);
    expect(compressions.calls).toBe(102);
    await fetchGzipped(variant("v100"));
    expect(compressions.calls).toBe(102);
  });
});
