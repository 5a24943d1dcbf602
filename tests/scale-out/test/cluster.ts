// Scale-out test helpers: demo instances in this process, each with its own Redis connections, and a round-robin proxy in front of them.
import { createServer as createHttpServer, request as httpRequest, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createDemoApp, type DemoApp, type DemoOptions } from "@otc/demo/app";
import { createRedisState, type RedisState } from "@otc/redis";
import { createServer, listen, type Tool } from "@otc/server";

/** A demo instance on 127.0.0.1 port 0 whose shared state is in Redis. */
export interface Instance {
  url: string;
  demo: DemoApp;
  state: RedisState;
  close(): Promise<void>;
}

/** Starts one demo instance with its own Redis connection (as a separate process would have). */
export async function startInstance(redisUrl: string, options: DemoOptions = {}): Promise<Instance> {
  const state = createRedisState(redisUrl, { readyTimeoutMs: 500, commandTimeoutMs: 1_000 });
  await state.ready();
  const demo = createDemoApp({
    logger: false,
    validateResponses: true,
    ...options,
    idempotencyStore: state.idempotencyStore,
    tokenStore: state.tokenStore,
    challengeStore: state.challengeStore,
  });
  const running = await listen(demo.app, { port: 0, drainTimeoutMs: 1_000 });
  return {
    url: running.url,
    demo,
    state,
    close: async () => {
      await running.close();
      await state.close();
    },
  };
}

/** A server of a test's own tools, with its own Redis connection. */
export interface ToolServer {
  url: string;
  state: RedisState;
  close(): Promise<void>;
}

/** Starts a server of the test's own tools with its own Redis connection. */
export async function startToolServer(redisUrl: string, tools: Tool[]): Promise<ToolServer> {
  const state = createRedisState(redisUrl, { readyTimeoutMs: 500, commandTimeoutMs: 1_000 });
  await state.ready();
  const app = createServer({
    tools,
    logger: false,
    idempotencyStore: state.idempotencyStore,
    tokenStore: state.tokenStore,
  });
  const running = await listen(app, { port: 0, drainTimeoutMs: 1_000 });
  return {
    url: running.url,
    state,
    close: async () => {
      await running.close();
      await state.close();
    },
  };
}

/** Starts `count` instances on one Redis. */
export async function startInstances(redisUrl: string, count: number, options: DemoOptions = {}): Promise<Instance[]> {
  return Promise.all(Array.from({ length: count }, () => startInstance(redisUrl, options)));
}

/** A round-robin HTTP proxy: every request (not every connection) goes to the next upstream; no stickiness. */
export interface RoundRobinProxy {
  url: string;
  /** Where requests go, in turn; set after start, since the instances' public URL is the proxy's. */
  upstreams: string[];
  /** How many requests each upstream got, by URL. */
  served: Map<string, number>;
  close(): Promise<void>;
}

export async function startProxy(): Promise<RoundRobinProxy> {
  let turn = 0;
  const proxy: RoundRobinProxy = { url: "", upstreams: [], served: new Map(), close: async () => {} };
  const server: Server = createHttpServer((req, res) => {
    const upstream = proxy.upstreams[turn++ % proxy.upstreams.length];
    if (!upstream) {
      res.writeHead(502).end();
      return;
    }
    proxy.served.set(upstream, (proxy.served.get(upstream) ?? 0) + 1);
    const target = new URL(req.url ?? "/", upstream);
    const forwarded = httpRequest(
      target,
      { method: req.method, headers: { ...req.headers, host: target.host } },
      (answer) => {
        res.writeHead(answer.statusCode ?? 502, answer.headers);
        answer.pipe(res);
      },
    );
    forwarded.on("error", () => {
      if (!res.headersSent) {
        res.writeHead(502);
      }
      res.end();
    });
    req.pipe(forwarded);
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  proxy.url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  proxy.close = () =>
    new Promise((resolve) => {
      server.closeAllConnections();
      server.close(() => resolve());
    });
  return proxy;
}

/** The anti-CSRF token in a demo consent page. */
export function csrfIn(page: string): string {
  const found = /<input type="hidden" name="csrf" value="([^"]+)">/.exec(page);
  if (!found?.[1]) {
    throw new Error("the consent page has no csrf input");
  }
  return found[1];
}

/** Approves a challenge through its consent page at `pageUrl` (GET for the form's token, then POST), as a browser would. */
export async function approve(pageUrl: string, postUrl = pageUrl): Promise<Response> {
  const page = await fetch(pageUrl);
  if (page.status !== 200) {
    throw new Error(`consent page answered ${page.status}`);
  }
  return fetch(postUrl, {
    method: "POST",
    headers: { "content-type": "application/x-www-form-urlencoded" },
    body: new URLSearchParams({ csrf: csrfIn(await page.text()), action: "approve" }).toString(),
    redirect: "manual",
  });
}

/** `url` with its origin replaced by `base`'s: the same path on another instance. */
export const onInstance = (url: string, base: string) => {
  const moved = new URL(url);
  const target = new URL(base);
  moved.protocol = target.protocol;
  moved.host = target.host;
  return moved.toString();
};
