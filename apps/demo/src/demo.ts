/** What every demo server is made of, whichever adapter serves it: the catalog and the stores it shares; the demo Google provider (a hand-made consent page), or with Example Accounts the oauth extension, the connections vault (`example`, and `google` in its place) and the demo's sign-in. */
import type { InspectorFilesLoader } from "@otc/inspector/fetch";
import {
  type AdapterOptions,
  type ChallengeStore,
  type FetchPage,
  MemoryTokenStore,
  type VaultKey,
} from "@otc/server/fetch";
import type { PageHandler } from "@otc/server/node";
import type { ExampleAccounts } from "./accounts.js";
import { DemoSession } from "./demo-session.js";
import { EXAMPLE_PROVIDER_ID, exampleProfileTool } from "./example-profile.js";
import { DemoGoogleProvider } from "./google-provider.js";
import { DEMO_TOOLKITS, demoTools, GMAIL_READONLY_SCOPE } from "./tools.js";

/** The provider Gmail.GetEmails names in `requirements.authorization`. */
const GOOGLE_PROVIDER_ID = "google";

/**
 * Options of a demo server: every server option except the tools and providers, which the demo fixes;
 * plus where the demo Google provider keeps its challenges (default: in memory; not used with `accounts`).
 */
export type DemoOptions = Omit<AdapterOptions, "tools" | "authorizationProviders" | "pages"> & {
  challengeStore?: ChallengeStore;
  /** Where the Inspector's built files come from. Default: read from its package on Node; not served on a fetch host unless given. */
  inspectorFiles?: InspectorFilesLoader;
  /**
   * Example Accounts (accounts.ts, Node only), made for this server's `publicUrl`: its access tokens are accepted
   * (the oauth extension, beside `auth`'s API keys and JWTs), it is the connections providers `example` and
   * `google` (Gmail's, in place of the demo Google provider and its consent page), the demo's sign-in at
   * /demo/signin goes through it, and the catalog gains Example.Profile.
   */
  accounts?: ExampleAccounts;
  /** The connections vault's keys with `accounts`. Default: one made at start (connections then last one run). */
  vaultKeys?: readonly VaultKey[];
};

/** The parts of a demo server that tests reach into. */
export interface DemoParts {
  /** The demo Google provider, whose consent pages are at /demo/authorize: without `accounts` only. */
  google?: DemoGoogleProvider;
  counter: { value: number };
  /** The demo's sign-in, with `accounts`. */
  session?: DemoSession;
}

/** What {@link demoParts} answers besides the parts: the adapter options that serve them, and the pages they add. */
export interface DemoServing {
  serverOptions: AdapterOptions;
  /** Fetch pages: the consent pages at /demo/authorize, or with `accounts` the sign-in at /demo/signin. */
  pages: FetchPage[];
  nodePages: PageHandler[];
}

/**
 * The parts of a demo without Example Accounts (every adapter's, and the only one the fetch handler has): the demo
 * Google provider answers Gmail's challenges on its consent pages.
 */
export function defaultParts(
  options: Omit<DemoOptions, "accounts" | "vaultKeys">,
): DemoParts & { google: DemoGoogleProvider } & DemoServing {
  const { challengeStore, inspectorFiles: _files, ...serverOptions } = options;
  // One token store for the server and the provider: a challenge completed here may have started on another instance.
  const tokenStore = serverOptions.tokenStore ?? new MemoryTokenStore();
  const google = new DemoGoogleProvider(challengeStore ? { challengeStore, tokenStore } : { tokenStore });
  const counter = { value: 0 };
  return {
    google,
    counter,
    serverOptions: {
      ...serverOptions,
      tokenStore,
      tools: demoTools(counter),
      toolkits: DEMO_TOOLKITS,
      authorizationProviders: [google],
    },
    pages: [google.page()],
    nodePages: [],
  };
}

/** The demo's parts, the adapter options that serve them, and the pages they add. */
export function demoParts(options: DemoOptions): DemoParts & DemoServing {
  const { accounts, vaultKeys, ...rest } = options;
  if (!accounts) {
    return defaultParts(rest);
  }
  const { challengeStore: _challenges, inspectorFiles: _files, ...serverOptions } = rest;
  const tokenStore = serverOptions.tokenStore ?? new MemoryTokenStore();
  const counter = { value: 0 };
  const tools = demoTools(counter);
  const session = new DemoSession({
    publicUrl: accounts.resource,
    issuer: accounts.issuer,
    client: accounts.signIn,
    endpoints: accounts.endpoints,
  });
  return {
    counter,
    session,
    serverOptions: {
      ...serverOptions,
      publicUrl: serverOptions.publicUrl ?? accounts.resource,
      tokenStore,
      tools: [...tools, exampleProfileTool(accounts.endpoints.userinfo)],
      toolkits: {
        ...DEMO_TOOLKITS,
        Example: { description: "The user's profile at Example Accounts, through the vault." },
      },
      // Gmail's `google` is a provider of the vault: a call without its connection answers the vault's challenge.
      authorizationProviders: [],
      auth: {
        ...serverOptions.auth,
        oauth: {
          authorizationServers: [accounts.issuer],
          resource: accounts.resource,
          resourceName: "OXP demo Tool Server",
        },
      },
      connections: {
        providers: [
          {
            id: EXAMPLE_PROVIDER_ID,
            name: "Example Accounts",
            issuer: accounts.issuer,
            clientId: accounts.connections.clientId,
            clientSecret: accounts.connections.clientSecret,
            scopes: ["openid", "profile", "email"],
          },
          {
            id: GOOGLE_PROVIDER_ID,
            name: "Google (Example Accounts)",
            issuer: accounts.issuer,
            clientId: accounts.google.clientId,
            clientSecret: accounts.google.clientSecret,
            scopes: ["openid", "email", GMAIL_READONLY_SCOPE],
          },
        ],
        keys: vaultKeys ?? [{ id: "demo", key: randomKey() }],
        verifyBrowser: session.verifyBrowser,
      },
    },
    pages: [session.page()],
    nodePages: [accounts.page],
  };
}

/** 32 random bytes, base64url: a vault key for one run. */
function randomKey(): string {
  let text = "";
  for (const byte of crypto.getRandomValues(new Uint8Array(32))) {
    text += String.fromCharCode(byte);
  }
  return btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}
