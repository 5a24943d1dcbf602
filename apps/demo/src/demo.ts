/** What every demo server is made of, whichever adapter serves it: the catalog, the demo Google provider, the stores they share. */
import type { InspectorFilesLoader } from "@otc/inspector/fetch";
import { type AdapterOptions, type ChallengeStore, MemoryTokenStore } from "@otc/server/fetch";
import { DemoGoogleProvider } from "./google-provider.js";
import { demoTools } from "./tools.js";

/**
 * Options of a demo server: every server option except the tools and providers, which the demo fixes;
 * plus where the demo Google provider keeps its challenges (default: in memory).
 */
export type DemoOptions = Omit<AdapterOptions, "tools" | "authorizationProviders" | "pages"> & {
  challengeStore?: ChallengeStore;
  /** Where the Inspector's built files come from. Default: read from its package on Node; not served on a fetch host unless given. */
  inspectorFiles?: InspectorFilesLoader;
};

/** The parts of a demo server that tests reach into. */
export interface DemoParts {
  google: DemoGoogleProvider;
  counter: { value: number };
}

/** The demo's parts, and the adapter options that serve them. */
export function demoParts(options: DemoOptions): DemoParts & { serverOptions: AdapterOptions } {
  const { challengeStore, inspectorFiles: _files, ...serverOptions } = options;
  // One token store for the server and the provider: a challenge completed here may have started on another instance.
  const tokenStore = serverOptions.tokenStore ?? new MemoryTokenStore();
  const google = new DemoGoogleProvider(challengeStore ? { challengeStore, tokenStore } : { tokenStore });
  const counter = { value: 0 };
  return {
    google,
    counter,
    serverOptions: { ...serverOptions, tokenStore, tools: demoTools(counter), authorizationProviders: [google] },
  };
}
