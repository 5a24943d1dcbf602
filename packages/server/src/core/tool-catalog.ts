/** The catalog a core serves: GET /tools bodies and ETags, the lists a token's scopes allow, the search. */
import type { ToolDefinition, ToolListResponse } from "@otc/types";
import { setBounded } from "./bounded-map.js";
import { CatalogSearch, type ToolkitDescriptions } from "./catalog-search.js";
import { sha256Base64url } from "./fingerprint.js";
import type { ListForm } from "./tool-definitions.js";
import { formSlot, type ToolRegistry } from "./tool-registry.js";

/** The GET /tools body as JSON text and its strong ETag (quoted), as {@link ToolCatalog.toolList} makes them. */
export interface ToolList {
  readonly body: string;
  readonly etag: string;
}

/** How many scope-filtered tool lists are kept (`toolListFor`): each distinct set of granted scopes that matter makes one. */
const GRANTED_LISTS_KEPT = 64;

/**
 * A registry's definitions as the catalog routes serve them, each form made once: the catalog never changes under a
 * core, so every answer is cached by what it depends on (the list form, the scopes some tool requires).
 */
export class ToolCatalog {
  /** The GET /tools bodies and their ETags, one per list form (tool-registry.ts `formSlot`). */
  private readonly lists: (Promise<ToolList> | undefined)[] = [];
  /**
   * The lists of tools an OAuth access token's scopes allow, by form and by the scopes that matter (those some
   * tool requires): few distinct sets in practice, and bounded all the same.
   */
  private readonly granted = new Map<string, { list: ToolList; items: readonly ToolDefinition[] }>();
  /** Every scope some tool requires, sorted: the part of a token's scopes its tool list depends on. */
  private readonly requiredScopes: readonly string[];
  private searchIndex: CatalogSearch | undefined;
  /** The ids each granted catalog shows, for searches made with an access token. */
  private readonly visibleIds = new WeakMap<readonly ToolDefinition[], ReadonlySet<string>>();

  constructor(
    private readonly registry: ToolRegistry,
    private readonly toolkitDescriptions: ToolkitDescriptions | undefined,
  ) {
    this.requiredScopes = [...registry.requiredScopes].sort();
    if (toolkitDescriptions !== undefined) {
      // A mistake in the descriptions is one of the catalog's: found at start-up whether or not search is offered.
      this.search();
    }
  }

  /** The GET /tools body: OXP 1.0's, or with the fields of the extensions asked for (docs/protocol.md 9.2, 9.6). */
  listTools(form: ListForm = {}): ToolListResponse {
    return { items: [...this.registry.list(form)] };
  }

  /**
   * The GET /tools body as JSON text, with a strong ETag for `If-None-Match` (the body's SHA-256). Each form is made
   * once: every call resolves to the same object, which a caller may key its own caches on. A promise, as it was when
   * the digest came from Web Crypto: callers written for that keep working.
   */
  toolList(form: ListForm = {}): Promise<ToolList> {
    const slot = formSlot(form);
    let cached = this.lists[slot];
    if (!cached) {
      cached = Promise.resolve(listOf(this.registry.list(form)));
      this.lists[slot] = cached;
    }
    return cached;
  }

  /**
   * The tools an OAuth access token with `granted` scopes may call (docs/protocol.md 9.6,
   * `[oauth.catalog-by-scope]`), as {@link toolList} gives them: the whole list when no tool requires a scope the
   * token lacks.
   */
  toolListFor(form: ListForm, granted: ReadonlySet<string>): Promise<ToolList> {
    return Promise.resolve(this.grantedCatalog(form, granted).list);
  }

  /** The definitions of the tools an access token with `granted` scopes may call, in `form` (for pages of them). */
  definitionsFor(form: ListForm, granted: ReadonlySet<string>): readonly ToolDefinition[] {
    return this.grantedCatalog(form, granted).items;
  }

  /**
   * The search extension's index and answers (docs/protocol.md 9.5), built on first use; a server offering search
   * asks for it when it starts, so that no request pays for the index.
   */
  search(): CatalogSearch {
    this.searchIndex ??= new CatalogSearch(this.registry, this.toolkitDescriptions);
    return this.searchIndex;
  }

  /** The ids of the tools an access token with `granted` scopes may call; undefined when it may call every tool. */
  visibleTo(granted: ReadonlySet<string>): ReadonlySet<string> | undefined {
    if (this.requiredScopes.every((scope) => granted.has(scope))) {
      return undefined;
    }
    const items = this.grantedCatalog({}, granted).items;
    let ids = this.visibleIds.get(items);
    if (!ids) {
      ids = new Set(items.map((definition) => definition.id));
      this.visibleIds.set(items, ids);
    }
    return ids;
  }

  /** The catalog `granted` scopes allow in `form`, made once per form and set of the scopes that matter. */
  private grantedCatalog(
    form: ListForm,
    granted: ReadonlySet<string>,
  ): { list: ToolList; items: readonly ToolDefinition[] } {
    // Only the scopes some tool requires decide the list: the registry's are fixed, and kept sorted.
    const relevant = this.requiredScopes.filter((scope) => granted.has(scope));
    const key = `${formSlot(form)} ${relevant.join(" ")}`;
    let catalog = this.granted.get(key);
    if (!catalog) {
      // The form may leave `required_scopes` out: the full form, in the same order, says what each tool needs.
      const full = this.registry.list({ annotations: true, scopes: true });
      const items =
        relevant.length === this.requiredScopes.length
          ? this.registry.list(form)
          : this.registry
              .list(form)
              .filter((_definition, index) =>
                (full[index]?.required_scopes ?? []).every((scope) => granted.has(scope)),
              );
      catalog = { list: listOf(items), items };
      setBounded(this.granted, key, catalog, GRANTED_LISTS_KEPT);
    }
    return catalog;
  }
}

/** A tool list's body as JSON text, with its strong ETag (the body's SHA-256). */
function listOf(items: readonly ToolDefinition[]): ToolList {
  const body = JSON.stringify({ items });
  return Object.freeze({ body, etag: `"${sha256Base64url(body)}"` });
}
