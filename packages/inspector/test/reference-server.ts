// The server the /docs page's own script points Scalar at, found by running the script served with the page, as a browser would.
import { runInNewContext } from "node:vm";

/**
 * The "This server" URL Scalar gets when the /docs page `html`, served at `pageUrl`, runs its script `init` (the
 * `init-<hash>.js` asset): the script reads the page's `docs-config` and the window's location, nothing else.
 *
 * @example
 * expect(referenceServer(html, init, "http://127.0.0.1:1234/oxp/docs")).toBe("http://127.0.0.1:1234/oxp");
 */
export function referenceServer(html: string, init: string, pageUrl: string): string {
  const config = /<script id="docs-config" type="application\/json">(.*?)<\/script>/.exec(html)?.[1];
  if (config === undefined) {
    throw new Error("the page has no docs-config");
  }
  const servers: string[] = [];
  const window = {
    location: new URL(pageUrl),
    Scalar: {
      createApiReference: (_selector: string, options: { servers: { url: string }[]; baseServerURL: string }) => {
        servers.push(...options.servers.map((server) => server.url), options.baseServerURL);
      },
    },
  };
  const document = { getElementById: (id: string) => (id === "docs-config" ? { textContent: config } : null) };
  runInNewContext(init, { window, document, URL });
  const [server, ...others] = servers;
  if (server === undefined || others.some((other) => other !== server)) {
    throw new Error(`the script named no one server: ${JSON.stringify(servers)}`);
  }
  return server;
}
