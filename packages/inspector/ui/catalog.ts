/** The tool list as the page loads it: page by page, on demand, from a server with the pagination extension; whole from one without; one toolkit's tools when filtered. */
import type { OxpClient } from "@otc/client";
import type { ToolDefinition } from "@otc/types";

/** Tools asked for per page (the server's own default is 100; a smaller page shows sooner). */
export const PAGE_SIZE = 50;

/** The next tools of a catalog, and whether they were the last. */
export interface CatalogPage {
  tools: ToolDefinition[];
  /** True once the server has no more: the last page came, or the whole list did. */
  done: boolean;
}

/** A catalog being read: `next()` gives the next page; `close()` drops what is left. */
export interface Catalog {
  next(): Promise<CatalogPage>;
  close(): void;
}

/** What to list, and which of the server's extensions the page asks for. */
export interface CatalogOptions {
  /** The extensions the server's discovery document lists; [] lists as OXP 1.0 does. */
  extensions: readonly string[];
  /** Only this toolkit's tools (ids that start with `toolkit.`); empty or absent for all. */
  toolkit?: string;
}

/** True when `tool` belongs to `toolkit`, matched exactly, as a server's toolkit filter matches it. */
export const inToolkit = (tool: ToolDefinition, toolkit: string) => tool.id.startsWith(`${toolkit}.`);

/**
 * Opens the catalog of the client's server. With `pagination` among `extensions` each `next()` is one page of
 * {@link PAGE_SIZE} tools (the server filters by toolkit); without it the first `next()` is the whole list,
 * filtered here. `annotations` among them lists each tool's annotations and deprecation message. The client
 * asks the server for an extension only where its discovery document names it.
 *
 * @example
 * const catalog = openCatalog(client, { extensions: ["annotations", "pagination"], toolkit: "Calculator" });
 * const { tools, done } = await catalog.next();
 */
export function openCatalog(client: OxpClient, options: CatalogOptions): Catalog {
  const annotations = options.extensions.includes("annotations");
  const toolkit = options.toolkit || undefined;
  if (!options.extensions.includes("pagination")) {
    let read = false;
    return {
      async next() {
        if (read) {
          return { tools: [], done: true };
        }
        read = true;
        // Without options, the request is OXP 1.0's, byte for byte.
        const tools = await client.listTools(annotations ? { annotations: true } : {});
        return { tools: toolkit === undefined ? tools : tools.filter((tool) => inToolkit(tool, toolkit)), done: true };
      },
      close() {},
    };
  }
  const pages = client.iterateTools({
    limit: PAGE_SIZE,
    annotations,
    ...(toolkit !== undefined ? { toolkit } : {}),
  });
  let done = false;
  return {
    async next() {
      // The client yields tools one by one, asking for the next page when the last one's run out: taking a page's
      // worth asks for one page (a server that sends shorter pages is asked for as many as it takes).
      const tools: ToolDefinition[] = [];
      while (!done && tools.length < PAGE_SIZE) {
        const step = await pages.next();
        if (step.done) {
          done = true;
        } else {
          tools.push(step.value);
        }
      }
      return { tools, done };
    },
    close() {
      done = true;
      void pages.return(undefined).catch(() => {});
    },
  };
}
