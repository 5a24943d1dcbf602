/** Our Express adapter as deployed: `createServer` + `listen` from @otc/server, default JSON logs on standard output. */
import { createServer, listen } from "@otc/server";
import { catalogTools } from "./catalog.mjs";
import { vaultServerOptions } from "./vault.mjs";

/**
 * Server options shared by our two adapters: the catalog, and when asked, API key + JWT authentication (`auth`), or
 * API key + OAuth access tokens from `oauth.issuer` for `oauth.resource` (`auth` and `oauth`), or API key + the
 * connections extension and its tool, beside the catalog's (`auth` and `vault`: bench/stacks/vault.mjs).
 */
export function ourOptions({ catalog, auth, oauth, vault }) {
  const options = { tools: catalogTools(catalog) };
  if (auth && vault) {
    const { tools, connections } = vaultServerOptions(vault);
    options.tools = [...options.tools, ...tools];
    options.auth = { apiKeys: [auth.apiKey] };
    options.connections = connections;
  } else if (auth && oauth) {
    options.auth = {
      apiKeys: [auth.apiKey],
      oauth: { authorizationServers: [oauth.issuer], resource: oauth.resource },
    };
  } else if (auth) {
    options.auth = { apiKeys: [auth.apiKey], jwt: { secret: auth.jwtSecret } };
  }
  return options;
}

export async function start(config) {
  // Default logger: one JSON line per call on standard output, which the bench points at /dev/null.
  const { url } = await listen(createServer(ourOptions(config)), { port: 0 });
  return { url, note: "createServer + listen" };
}
