/** The Inspector page: connection form, tool list (paged, by toolkit, searched on the server or filtered here), the selected tool (definition and call) and the session's history. */
import { type OxpClient, OxpConnectionError, type ToolSearchSummary } from "@otc/client";
import type { DiscoveryDocument, ToolDefinition } from "@otc/types";
import { type FormEvent, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { type Described, deprecationOf, isDestructive, titleOf } from "./annotations.js";
import { ConnectionsView } from "./ConnectionsView.js";
import { type Catalog, openCatalog } from "./catalog.js";
import { type HistoryEntry, HistoryView } from "./History.js";
import {
  type AuthorizationResponse,
  authorizationUrl,
  chosenAuthorizationServer,
  codeChallengeOf,
  codeOf,
  exchangeCode,
  type PendingSignIn,
  type ResourceMetadata,
  randomToken,
  readAuthorizationResponse,
  readAuthorizationServer,
  readResourceMetadata,
  redirectUriOf,
  rememberAuthorizationServer,
  savePendingSignIn,
  scopesFor,
  takePendingSignIn,
  withAuthOrigin,
  withoutResponse,
} from "./oauth.js";
import { fromError } from "./outcome.js";
import { type SignInState, SignInView } from "./SignInView.js";
import { debounce, filterTools, loadDefinition, SEARCH_DEBOUNCE_MS, searchServer } from "./search.js";
import {
  type Credentials,
  canConnect,
  clientFor,
  DEFAULT_JWT_SUBJECT,
  defaultServerUrl,
  type PageConfig,
  readExtensionInfo,
  readPageConfig,
} from "./session.js";
import { SignInSession } from "./signed-in.js";
import { ToolView } from "./ToolView.js";

/** The extensions the page knows how to use (docs/protocol.md 9), as discovery documents name them. */
const KNOWN_EXTENSIONS = ["annotations", "tasks", "pagination", "search", "oauth", "connections"];

/** The tools loaded so far, and how the list was asked for. */
interface ToolsState {
  tools: ToolDefinition[];
  /** The toolkit filter the list was asked for with; "" for all. */
  toolkit: string;
  /** True once the server has no more tools for this filter. */
  done: boolean;
  loading: boolean;
  /** Why the last page could not be loaded. */
  error?: string;
}

type Connection =
  | { state: "idle" | "connecting" }
  | {
      state: "connected";
      /** Which connection of the page's this is: a new one starts its controls afresh. */
      session: number;
      serverUrl: string;
      /** The extensions of the server's discovery document that the page uses; [] for an OXP 1.0 server. */
      extensions: string[];
      /** Why the page uses none of the extensions the server lists, when it had to give them up. */
      note?: string;
      /** The server's discovery document; undefined for an OXP 1.0 server. */
      discovery?: DiscoveryDocument;
      list: ToolsState;
    }
  | { state: "error"; message: string };

/** The message of a failed listing, as the connection status shows it. */
function listingError(error: unknown, serverUrl: string): string {
  const outcome = fromError(error, serverUrl);
  if (outcome.kind === "unauthenticated") {
    return `Authentication failed: ${outcome.message}${outcome.developerMessage ? ` (${outcome.developerMessage})` : ""}. Enter an API key, a bearer token or a JWT secret, or sign in where the server offers it.`;
  }
  return "message" in outcome ? `Could not list the tools: ${outcome.message}` : "Could not list the tools";
}

/** The message of a search the server did not answer, as the search box shows it: its message and developer message. */
function searchError(error: unknown, serverUrl: string): string {
  const outcome = fromError(error, serverUrl);
  if (!("message" in outcome)) {
    return "The search failed";
  }
  const detail = "developerMessage" in outcome && outcome.developerMessage ? ` (${outcome.developerMessage})` : "";
  return `The search failed: ${outcome.message}${detail}`;
}

/** True when the page and the server are on different origins: every request the page sends is a CORS request. */
function crossOrigin(serverUrl: string): boolean {
  try {
    return new URL(serverUrl).origin !== window.location.origin;
  } catch {
    return false;
  }
}

/** The connection's summary: the server, how many tools are loaded, and the extensions in use. */
function connectedText(connection: Extract<Connection, { state: "connected" }>): string {
  const { tools, done, toolkit } = connection.list;
  const count = `${tools.length} tool${tools.length === 1 ? "" : "s"}${toolkit ? ` of toolkit ${toolkit}` : ""}${done ? "" : " loaded so far"}`;
  const extensions = connection.extensions.length ? ` · extensions: ${connection.extensions.join(", ")}` : "";
  return `Connected to ${connection.serverUrl}: ${count}${extensions}`;
}

/** `Toolkit.Name` and the version of a tool id such as `Calculator.Add@1.0.0`. */
export function splitToolId(tool: { id: string }): { toolkit: string; name: string } {
  const qualified = tool.id.split("@")[0] ?? tool.id;
  const dot = qualified.indexOf(".");
  return dot > 0
    ? { toolkit: qualified.slice(0, dot), name: qualified.slice(dot + 1) }
    : { toolkit: qualified, name: qualified };
}

function ConnectionForm(props: {
  config: PageConfig;
  initial: Credentials;
  connection: Connection;
  onConnect: (credentials: Credentials) => void;
}) {
  const [credentials, setCredentials] = useState(props.initial);
  const field = (name: Exclude<keyof Credentials, "signIn">) => ({
    value: credentials[name],
    onChange: (event: { target: { value: string } }) => setCredentials({ ...credentials, [name]: event.target.value }),
  });
  // Secrets are uncontrolled: React mirrors a controlled input's value into its `value` attribute, into the DOM.
  const secret = (name: "apiKey" | "jwtSecret" | "accessToken") => ({
    defaultValue: "",
    onChange: field(name).onChange,
  });
  const needsReload = !canConnect(credentials.serverUrl, props.config, window.location);
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (needsReload) {
      // The page's Content-Security-Policy names the servers it may call: a new one needs a reload with ?url=.
      const next = new URL(window.location.href);
      next.searchParams.set("url", credentials.serverUrl);
      window.location.assign(next.toString());
      return;
    }
    props.onConnect(credentials);
  };
  const { connection } = props;
  return (
    <form className="connection" aria-label="Connection" onSubmit={submit} autoComplete="off">
      <label>
        Server URL
        <input type="url" required {...field("serverUrl")} />
      </label>
      <label>
        API key
        <input type="password" autoComplete="off" {...secret("apiKey")} />
      </label>
      <label>
        Bearer token
        <input type="password" autoComplete="off" {...secret("accessToken")} />
      </label>
      <label>
        JWT secret
        <input type="password" autoComplete="off" {...secret("jwtSecret")} />
      </label>
      <label>
        JWT audience
        <input type="text" {...field("jwtAudience")} />
      </label>
      <label>
        JWT subject
        <input type="text" {...field("jwtSubject")} />
      </label>
      <button type="submit" disabled={connection.state === "connecting"}>
        {needsReload ? "Open server" : "Connect"}
      </button>
      <p role="status" className={`connection-status ${connection.state}`}>
        {connection.state === "connecting" && "Connecting…"}
        {connection.state === "connected" && connectedText(connection)}
        {connection.state === "error" && connection.message}
        {connection.state === "idle" && "Not connected"}
      </p>
      {connection.state === "connected" && connection.note && <p className="hint">{connection.note}</p>}
      <p className="hint">
        Bearer token: an OAuth access token you already hold, sent as it is (in place of a JWT). JWT secret: the
        server's shared HS256 secret, for local demos only: whoever holds it can sign in as any user, so never type a
        production server's secret into a web page.
      </p>
      {needsReload && (
        <p className="hint">
          This page may only call the servers it was opened for: it reloads with this URL, then asks for credentials
          again (they are never stored).
        </p>
      )}
    </form>
  );
}

/** The short marks a listed tool gets from its annotations: what to know before choosing it. */
function badgesOf(tool: Described): string[] {
  const badges: string[] = [];
  if (deprecationOf(tool)) {
    badges.push("deprecated");
  }
  if (isDestructive(tool)) {
    badges.push("destructive");
  } else if (tool.annotations?.read_only === true) {
    badges.push("read-only");
  }
  return badges;
}

/** What the server's search answered for the query in the box; undefined while the box is empty (the full list shows). */
interface SearchState {
  /** The latest query asked (trimmed), and the toolkit filter it was asked with ("" for all). */
  asked: { query: string; toolkit: string };
  /** True while an answer (a first page or the next) is awaited. */
  loading: boolean;
  /** Why the server did not answer the query asked, as text (a 400's message, a lost connection). */
  error?: string;
  /**
   * The matches shown, best first, and the query they answer: the last answer stays in sight while the next query is
   * asked, so the list changes once per answer, not twice.
   */
  answer?: { query: string; toolkit: string; items: ToolSearchSummary[]; nextCursor?: string };
}

/** A score as the list shows it: two decimals (the title holds the server's figure). */
const scoreText = (score: number) => score.toFixed(2);

/** The button that selects a tool, listed or found: its name, marks and version. */
function ToolButton(props: {
  tool: ToolDefinition | ToolSearchSummary;
  annotated: boolean;
  selected: string | undefined;
  onSelect: (id: string) => void;
}) {
  const { tool } = props;
  const title = props.annotated ? titleOf(tool) : undefined;
  const badges = props.annotated ? badgesOf(tool) : [];
  return (
    <button
      type="button"
      aria-label={tool.id}
      aria-pressed={props.selected === tool.id}
      title={title ? `${title}: ${tool.description}` : tool.description}
      onClick={() => props.onSelect(tool.id)}
    >
      <span className="tool-name">{splitToolId(tool).name}</span>
      {badges.map((badge) => (
        <span key={badge} className={`badge ${badge}`}>
          {badge}
        </span>
      ))}
      <span className="tool-version">{tool.version}</span>
    </button>
  );
}

/** The server's matches in its order, each with its toolkit, score and description (as text: it is the server's). */
function SearchResults(props: {
  found: SearchState;
  annotated: boolean;
  selected: string | undefined;
  onPick: (id: string) => void;
}) {
  const { found } = props;
  const { answer } = found;
  let status = "";
  if (found.loading) {
    status = `Searching the server for “${found.asked.query}”…`;
  } else if (answer && !found.error) {
    const count = answer.items.length;
    status =
      count === 0
        ? `No tool matches “${answer.query}”.`
        : `${count} match${count === 1 ? "" : "es"} for “${answer.query}”, best first${answer.nextCursor ? "; the server has more" : ""}`;
  }
  return (
    <>
      <p role="status" aria-label="Search status" className="catalog-status">
        {status}
      </p>
      {found.error && (
        <p role="alert" className="bad">
          {found.error}
        </p>
      )}
      {answer && !found.error && (
        <ol className="matches" aria-label="Search results">
          {answer.items.map((match) => (
            <li key={match.id}>
              <ToolButton tool={match} annotated={props.annotated} selected={props.selected} onSelect={props.onPick} />
              <p className="match-meta">
                <span className="match-toolkit">{match.toolkit}</span> · score{" "}
                <span className="match-score" title={String(match.score)}>
                  {scoreText(match.score)}
                </span>
              </p>
              <p className="match-description">{match.description}</p>
            </li>
          ))}
        </ol>
      )}
    </>
  );
}

function ToolList(props: {
  tools: ToolDefinition[];
  /** True when the server listed annotations: the list shows their marks and searches titles. */
  annotated: boolean;
  /** True while more tools may follow: the search then says it searches the loaded ones. */
  partial: boolean;
  selected: string | undefined;
  onSelect: (id: string) => void;
  /**
   * The server's search, where it offers it: the box then asks the server (debounced; Enter at once) and shows its
   * matches, instead of filtering the listed tools. `onSearch("")` goes back to the list.
   */
  search?: {
    found: SearchState | undefined;
    onSearch: (query: string) => void;
    onPick: (id: string) => void;
  };
}) {
  const [query, setQuery] = useState("");
  const onSearch = useRef(props.search?.onSearch);
  onSearch.current = props.search?.onSearch;
  const debounced = useMemo(() => debounce((value) => onSearch.current?.(value), SEARCH_DEBOUNCE_MS), []);
  useEffect(() => () => debounced.cancel(), [debounced]);
  const searching = props.search !== undefined;
  const groups = useMemo(() => {
    const byToolkit = new Map<string, ToolDefinition[]>();
    // With the server's search the box asks the server: the list stays whole until its answer replaces it.
    for (const tool of searching ? props.tools : filterTools(props.tools, query, props.annotated)) {
      const { toolkit } = splitToolId(tool);
      byToolkit.set(toolkit, [...(byToolkit.get(toolkit) ?? []), tool]);
    }
    return [...byToolkit.entries()].sort(([a], [b]) => a.localeCompare(b));
  }, [props.tools, props.annotated, query, searching]);
  const change = (value: string) => {
    setQuery(value);
    if (searching) {
      // Emptied, the box goes back to the list at once; a query waits for a pause in the typing.
      if (value.trim() === "") {
        debounced.flush(value);
      } else {
        debounced.schedule(value);
      }
    }
  };
  const submit = (event: FormEvent) => {
    event.preventDefault();
    if (searching) {
      debounced.flush(query);
    }
  };
  let placeholder = props.partial ? "Search the loaded tools" : "Search by name or description";
  if (searching) {
    placeholder = "Search the server's tools";
  }
  const found = props.search?.found;
  return (
    <nav className="tools" aria-label="Tools">
      <form className="tool-search" onSubmit={submit}>
        <input
          type="search"
          aria-label="Search tools"
          placeholder={placeholder}
          value={query}
          onChange={(event) => change(event.target.value)}
        />
      </form>
      {props.search && found && (found.answer || found.error || found.loading) ? (
        <SearchResults
          found={found}
          annotated={props.annotated}
          selected={props.selected}
          onPick={props.search.onPick}
        />
      ) : null}
      {!(found?.answer || found?.error) && groups.length === 0 && <p className="empty">No tool matches.</p>}
      {!(found?.answer || found?.error) &&
        groups.map(([toolkit, tools]) => (
          <section key={toolkit} aria-label={`Toolkit ${toolkit}`}>
            <h3>{toolkit}</h3>
            <ul>
              {[...tools]
                .sort((a, b) => a.id.localeCompare(b.id, undefined, { numeric: true }))
                .map((tool) => (
                  <li key={tool.id}>
                    <ToolButton
                      tool={tool}
                      annotated={props.annotated}
                      selected={props.selected}
                      onSelect={props.onSelect}
                    />
                  </li>
                ))}
            </ul>
          </section>
        ))}
    </nav>
  );
}

/** The "More results" below a search the server has more matches for: the next page, by its `next_cursor`. */
function MoreResults(props: { found: SearchState | undefined; onMore: () => void }) {
  const { found } = props;
  if (!found?.answer?.nextCursor || found.error) {
    return null;
  }
  return (
    <button type="button" className="load-more" onClick={props.onMore} disabled={found.loading}>
      {found.loading ? "Loading…" : "More results"}
    </button>
  );
}

/** The "load more" below a paged list that has more: the next page, asked for when the user wants it. */
function LoadMore(props: { list: ToolsState; onMore: () => void }) {
  const { list } = props;
  if (list.done || list.error) {
    return null;
  }
  return (
    <button type="button" className="load-more" onClick={props.onMore} disabled={list.loading}>
      {list.loading ? "Loading…" : "Load more tools"}
    </button>
  );
}

/** The toolkit filter and what the list holds; the filter also works on a server without pagination. */
function CatalogControls(props: { list: ToolsState; onFilter: (toolkit: string) => void }) {
  const { list } = props;
  const [toolkit, setToolkit] = useState(list.toolkit);
  const toolkits = useMemo(
    () => [...new Set(list.tools.map((tool) => splitToolId(tool).toolkit))].sort((a, b) => a.localeCompare(b)),
    [list.tools],
  );
  const submit = (event: FormEvent) => {
    event.preventDefault();
    props.onFilter(toolkit.trim());
  };
  const what = list.toolkit ? ` of toolkit ${list.toolkit}` : "";
  let status = `${list.tools.length} tool${list.tools.length === 1 ? "" : "s"}${what}`;
  if (list.loading) {
    status = `Loading tools${what}…`;
  } else if (!list.done) {
    status += ` loaded; the server has more`;
  }
  return (
    <section className="catalog" aria-label="Catalog">
      <form className="toolkit-filter" aria-label="Toolkit filter" onSubmit={submit}>
        <label>
          Toolkit
          <input
            type="text"
            list="known-toolkits"
            placeholder="All toolkits"
            value={toolkit}
            onChange={(event) => setToolkit(event.target.value)}
          />
        </label>
        <datalist id="known-toolkits">
          {toolkits.map((name) => (
            <option key={name} value={name} />
          ))}
        </datalist>
        <button type="submit" disabled={list.loading}>
          Filter
        </button>
        {list.toolkit && (
          <button
            type="button"
            disabled={list.loading}
            onClick={() => {
              setToolkit("");
              props.onFilter("");
            }}
          >
            All toolkits
          </button>
        )}
      </form>
      <p role="status" aria-label="Catalog status" className="catalog-status">
        {status}
      </p>
      {list.error && (
        <p role="alert" className="bad">
          {list.error}
        </p>
      )}
      {list.error && (
        <button type="button" onClick={() => props.onFilter(list.toolkit)} disabled={list.loading}>
          List again from the first page
        </button>
      )}
    </section>
  );
}

/** What the page's address and sessionStorage held at load: an authorization response to finish, a sign-in to go on with. */
interface Startup {
  response?: AuthorizationResponse;
  pending?: PendingSignIn;
}

let startup: Startup | undefined;

/**
 * Reads the page's start once: the authorization response leaves the address bar and the history at once (the page's
 * own address takes its place), and the pending sign-in leaves sessionStorage, whatever becomes of them.
 */
function readStartup(): Startup {
  if (startup) {
    return startup;
  }
  const response = readAuthorizationResponse(window.location.href);
  if (response) {
    window.history.replaceState(window.history.state, "", withoutResponse(window.location.href));
  }
  let pending: PendingSignIn | undefined;
  try {
    pending = takePendingSignIn(window.sessionStorage);
  } catch {
    // No sessionStorage (a sandboxed or private page): there is no sign-in to finish.
  }
  startup = { ...(response ? { response } : {}), ...(pending ? { pending } : {}) };
  return startup;
}

const messageOf = (error: unknown) => (error instanceof Error ? error.message : String(error));

/** The page's sessionStorage, or undefined where the page may not use it (a sandboxed or private page). */
function sessionStore(): Storage | undefined {
  try {
    return window.sessionStorage;
  } catch {
    return undefined;
  }
}

/** The status line of a sign-in: where, with which scopes, how often the access token was renewed. */
function signedInState(session: SignInSession): SignInState {
  return {
    state: "signed-in",
    issuer: session.issuer,
    ...(session.scope ? { scope: session.scope } : {}),
    renewals: session.renewals,
  };
}

export function App() {
  const config = useMemo(readPageConfig, []);
  const initial = useMemo<Credentials>(
    () => ({
      serverUrl: defaultServerUrl(config, window.location),
      apiKey: "",
      jwtSecret: "",
      jwtAudience: "",
      jwtSubject: DEFAULT_JWT_SUBJECT,
      accessToken: "",
    }),
    [config],
  );
  const [credentials, setCredentials] = useState<Credentials>(initial);
  const [connection, setConnection] = useState<Connection>({ state: "idle" });
  const [selected, setSelected] = useState<string>();
  /** The server's search for the box's query; the ref is what the handlers read, the state what renders. */
  const [found, setFound] = useState<SearchState>();
  const foundRef = useRef<SearchState>(undefined);
  const showFound = useCallback((next: SearchState | undefined) => {
    foundRef.current = next;
    setFound(next);
  }, []);
  /** Which search is the latest: an answer to an older one is dropped. */
  const searchTurn = useRef(0);
  /** A match picked from the search, and its definition once `GET /tools?ids=` has answered it. */
  const [picked, setPicked] = useState<{ id: string; tool?: ToolDefinition; error?: string }>();
  const pickTurn = useRef(0);
  const [history, setHistory] = useState<HistoryEntry[]>([]);
  const attempt = useRef(0);
  /** The connection's client and the catalog being read: a page that comes for another one is dropped. */
  const reading = useRef<{
    client: OxpClient;
    catalog: Catalog;
    serverUrl: string;
    extensions: string[];
  }>(undefined);
  const [signIn, setSignIn] = useState<SignInState>({ state: "idle" });
  /**
   * The discovery document of the server last connected to, kept even when its tools could not be listed: a server
   * that wants a token answers its list with a 401, and its document is where Sign in starts.
   */
  const [discovered, setDiscovered] = useState<{ serverUrl: string; discovery: DiscoveryDocument | undefined }>();
  const discoveredRef = useRef(discovered);
  /** The page's Sign in: its tokens, for one server, sent to that server only, kept in memory only. */
  const signedIn = useRef<SignInSession>(undefined);
  /** The resource metadata of the server discovered, read once it names one: where the authorization servers are chosen. */
  const [resourceInfo, setResourceInfo] = useState<{ serverUrl: string; metadata: ResourceMetadata; issuer: string }>();

  const connect = useCallback(
    async (next: Credentials) => {
      const mine = ++attempt.current;
      reading.current?.catalog.close();
      reading.current = undefined;
      searchTurn.current++;
      pickTurn.current++;
      showFound(undefined);
      setPicked(undefined);
      setCredentials(next);
      setConnection({ state: "connecting" });
      discoveredRef.current = undefined;
      setDiscovered(undefined);
      const client = clientFor(next);
      try {
        // Served without credentials; a server without it (404), or that answers it with an error, is an OXP 1.0 server.
        const discovery = await client.discover().then(
          (document) => document,
          () => undefined,
        );
        const offered = discovery?.extensions ?? [];
        if (discovery && offered.some((id) => id === "oauth" || id === "connections")) {
          const info = await readExtensionInfo(next.serverUrl);
          if (info) {
            discovery.extension_info = info;
          }
        }
        if (mine === attempt.current) {
          discoveredRef.current = { serverUrl: next.serverUrl, discovery };
          setDiscovered(discoveredRef.current);
        }
        let extensions = offered.filter((id) => KNOWN_EXTENSIONS.includes(id));
        let note: string | undefined;
        let catalog = openCatalog(client, { extensions });
        let page: Awaited<ReturnType<Catalog["next"]>>;
        try {
          page = await catalog.next();
        } catch (error) {
          const asked = extensions.some((id) => id === "annotations" || id === "pagination");
          if (!(error instanceof OxpConnectionError && asked && crossOrigin(next.serverUrl))) {
            throw error;
          }
          // A CORS policy that predates the extensions refuses the OXP-Extensions header: list as OXP 1.0 does.
          catalog = openCatalog(client, { extensions: [] });
          page = await catalog.next();
          const dropped = extensions.filter((id) => id !== "oauth");
          note = `The server offers ${dropped.join(", ")}, but its CORS policy does not let this page ask for them (the OXP-Extensions header): the page uses OXP 1.0 alone.`;
          // oauth shapes authentication, not the requests' header: its Sign in still works.
          extensions = extensions.filter((id) => id === "oauth");
        }
        if (mine !== attempt.current) {
          catalog.close();
          return;
        }
        reading.current = { client, catalog, serverUrl: next.serverUrl, extensions };
        setConnection({
          state: "connected",
          session: mine,
          serverUrl: next.serverUrl,
          extensions,
          ...(discovery ? { discovery } : {}),
          ...(note ? { note } : {}),
          list: { tools: page.tools, toolkit: "", done: page.done, loading: false },
        });
      } catch (error) {
        if (mine === attempt.current) {
          setConnection({ state: "error", message: listingError(error, next.serverUrl) });
        }
      }
    },
    [showFound],
  );

  /**
   * Asks the server for the first page of `query`'s matches (of `toolkit`, "" for all); an empty query goes back to the
   * list. The same query asked again while it is awaited or answered (Enter after the pause) sends nothing.
   */
  const search = useCallback(
    async (query: string, toolkit: string) => {
      const current = reading.current;
      const asked = { query: query.trim(), toolkit };
      const before = foundRef.current;
      if (!current || asked.query === "") {
        searchTurn.current++;
        showFound(undefined);
        return;
      }
      if (before && !before.error && before.asked.query === asked.query && before.asked.toolkit === toolkit) {
        return;
      }
      const turn = ++searchTurn.current;
      showFound({ asked, loading: true, ...(before?.answer && !before.error ? { answer: before.answer } : {}) });
      try {
        const page = await searchServer(current.client, { query: asked.query, toolkit });
        if (turn === searchTurn.current) {
          showFound({ asked, loading: false, answer: { ...asked, ...page } });
        }
      } catch (error) {
        if (turn === searchTurn.current) {
          showFound({ asked, loading: false, error: searchError(error, current.serverUrl) });
        }
      }
    },
    [showFound],
  );

  /** The next page of the matches shown, by the server's `next_cursor`, added below them. */
  const moreResults = useCallback(async () => {
    const current = reading.current;
    const before = foundRef.current;
    const answer = before?.answer;
    if (!current || !before || !answer?.nextCursor || before.loading) {
      return;
    }
    const turn = ++searchTurn.current;
    showFound({ ...before, loading: true });
    try {
      const page = await searchServer(current.client, {
        query: answer.query,
        toolkit: answer.toolkit,
        cursor: answer.nextCursor,
      });
      if (turn === searchTurn.current) {
        const known = new Set(answer.items.map((match) => match.id));
        const items = [...answer.items, ...page.items.filter((match) => !known.has(match.id))];
        const { nextCursor: _last, ...rest } = answer;
        showFound({
          ...before,
          loading: false,
          answer: { ...rest, items, ...(page.nextCursor !== undefined ? { nextCursor: page.nextCursor } : {}) },
        });
      }
    } catch (error) {
      if (turn === searchTurn.current) {
        showFound({ ...before, loading: false, error: searchError(error, current.serverUrl) });
      }
    }
  }, [showFound]);

  /** A match picked: its whole definition loaded with `GET /tools?ids=` (the summary has no schemas), then its form. */
  const pick = useCallback(async (id: string) => {
    const current = reading.current;
    if (!current) {
      return;
    }
    const turn = ++pickTurn.current;
    setSelected(id);
    setPicked({ id });
    try {
      const tool = await loadDefinition(current.client, id, current.extensions.includes("annotations"));
      if (turn === pickTurn.current) {
        setPicked({ id, tool });
      }
    } catch (error) {
      if (turn === pickTurn.current) {
        const outcome = fromError(error, current.serverUrl);
        setPicked({ id, error: `Could not load ${id}: ${"message" in outcome ? outcome.message : String(error)}` });
      }
    }
  }, []);

  /** A tool chosen from the list: the list's own definition. */
  const choose = useCallback((id: string) => {
    pickTurn.current++;
    setPicked(undefined);
    setSelected(id);
  }, []);

  const updateList = useCallback((update: (list: ToolsState) => ToolsState) => {
    setConnection((current) => (current.state === "connected" ? { ...current, list: update(current.list) } : current));
  }, []);

  /** The next page of the catalog being read, added to the list. */
  const loadMore = useCallback(async () => {
    const current = reading.current;
    if (!current) {
      return;
    }
    updateList((list) => ({ ...list, loading: true, error: undefined }));
    try {
      const page = await current.catalog.next();
      if (reading.current !== current) {
        return;
      }
      updateList((list) => {
        // A tool listed twice (a server that breaks its cursors) is shown once.
        const known = new Set(list.tools.map((tool) => tool.id));
        const fresh = page.tools.filter((tool) => !known.has(tool.id));
        return { ...list, tools: [...list.tools, ...fresh], done: page.done, loading: false };
      });
    } catch (error) {
      if (reading.current === current) {
        updateList((list) => ({ ...list, loading: false, error: listingError(error, current.serverUrl) }));
      }
    }
  }, [updateList]);

  /** The list again from its first page, of one toolkit ("" for all). */
  const filter = useCallback(
    async (toolkit: string) => {
      const current = reading.current;
      if (!current) {
        return;
      }
      current.catalog.close();
      const catalog = openCatalog(current.client, { extensions: current.extensions, toolkit });
      const mine = { ...current, catalog };
      reading.current = mine;
      updateList(() => ({ tools: [], toolkit, done: false, loading: true }));
      const searched = foundRef.current?.asked.query;
      if (searched) {
        // The matches shown are of the toolkit filtered on: asked again with the new one.
        void search(searched, toolkit);
      }
      try {
        const page = await catalog.next();
        if (reading.current === mine) {
          updateList(() => ({ tools: page.tools, toolkit, done: page.done, loading: false }));
        }
      } catch (error) {
        if (reading.current === mine) {
          updateList(() => ({
            tools: [],
            toolkit,
            done: false,
            loading: false,
            error: listingError(error, current.serverUrl),
          }));
        }
      }
    },
    [updateList, search],
  );

  /** The form's credentials, with the Sign in's tokens when they have no token of their own and are for its server. */
  const connectWith = useCallback(
    (next: Credentials) => {
      const session = signedIn.current;
      const withToken = !next.accessToken && session && !session.ended && session.serverUrl === next.serverUrl;
      return connect(withToken ? { ...next, signIn: session.accessTokens } : next);
    },
    [connect],
  );

  // The resource metadata of a server that offers Sign in, read as it is discovered: where it names several
  // authorization servers, the user picks one before signing in.
  useEffect(() => {
    const metadataUrl = discovered?.discovery?.extension_info?.oauth?.resource_metadata;
    setResourceInfo(undefined);
    if (!discovered || !metadataUrl || !canConnect(metadataUrl, config, window.location)) {
      return;
    }
    let current = true;
    readResourceMetadata(metadataUrl).then(
      (metadata) => {
        if (current) {
          const issuer = chosenAuthorizationServer(metadata, sessionStore());
          setResourceInfo({ serverUrl: discovered.serverUrl, metadata, issuer });
        }
      },
      // Sign in reads it again, and says what went wrong.
      () => undefined,
    );
    return () => {
      current = false;
    };
  }, [config, discovered]);

  /** The authorization server picked in the Sign in panel: kept for the resource for the rest of the session. */
  const chooseServer = useCallback(
    (issuer: string) => {
      const info = resourceInfo;
      if (!info?.metadata.authorizationServers.includes(issuer)) {
        return;
      }
      try {
        const storage = sessionStore();
        if (storage) {
          rememberAuthorizationServer(storage, info.metadata.resource, issuer);
        }
      } catch {
        // A full or refused sessionStorage: the choice holds for this page only.
      }
      setResourceInfo({ ...info, issuer });
    },
    [resourceInfo],
  );

  /**
   * Starts the authorization code flow with PKCE: the server's resource metadata, the chosen authorization server's
   * metadata (`wanted` where the metadata names it, else the one chosen this session, else the first), then the page
   * goes to the authorization endpoint. The page's policy lets it call only the origins it was opened for, so the
   * first time it reloads with `?auth=` naming the authorization server's, then goes on.
   */
  const startSignIn = useCallback(
    async (clientId: string, wanted?: string) => {
      const current = discoveredRef.current;
      const metadataUrl = current?.discovery?.extension_info?.oauth?.resource_metadata;
      if (!current || !metadataUrl) {
        return;
      }
      try {
        if (!canConnect(metadataUrl, config, window.location)) {
          throw new Error(`The server's resource metadata is at ${metadataUrl}, an origin this page may not call`);
        }
        setSignIn({ state: "working", step: "Reading the server's resource metadata…" });
        const resource = await readResourceMetadata(metadataUrl);
        const issuer =
          wanted && resource.authorizationServers.includes(wanted)
            ? wanted
            : chosenAuthorizationServer(resource, sessionStore());
        if (!canConnect(issuer, config, window.location)) {
          const next = new URL(withAuthOrigin(window.location.href, new URL(issuer).origin));
          if (current.serverUrl !== defaultServerUrl(config, window.location)) {
            next.searchParams.set("url", current.serverUrl);
          }
          savePendingSignIn(window.sessionStorage, {
            phase: "reload",
            serverUrl: current.serverUrl,
            clientId,
            issuer,
          });
          setSignIn({ state: "working", step: `Reloading so that the page may call ${new URL(issuer).origin}…` });
          window.location.assign(next.href);
          return;
        }
        setSignIn({ state: "working", step: `Reading the metadata of ${issuer}…` });
        const server = await readAuthorizationServer(issuer);
        const state = randomToken();
        const codeVerifier = randomToken();
        const redirectUri = redirectUriOf(window.location.href);
        const codeChallenge = await codeChallengeOf(codeVerifier);
        savePendingSignIn(window.sessionStorage, {
          phase: "authorize",
          serverUrl: current.serverUrl,
          clientId,
          state,
          codeVerifier,
          redirectUri,
          resource: resource.resource,
          issuer,
          ...(server.issParameterSupported ? { issParameterSupported: true } : {}),
          tokenEndpoint: server.tokenEndpoint,
        });
        setSignIn({ state: "working", step: `Going to ${issuer} to sign in…` });
        window.location.assign(
          authorizationUrl({
            authorizationEndpoint: server.authorizationEndpoint,
            clientId,
            redirectUri,
            resource: resource.resource,
            state,
            codeChallenge,
            scopes: scopesFor(server),
          }),
        );
      } catch (error) {
        setSignIn({ state: "error", message: `Sign in failed: ${messageOf(error)}` });
      }
    },
    [config],
  );

  /** Back from the authorization server: the state checked, the code exchanged, then the server listed with the token. */
  const finishSignIn = useCallback(
    async (response: AuthorizationResponse, pending: PendingSignIn | undefined) => {
      const server = pending && canConnect(pending.serverUrl, config, window.location) ? pending.serverUrl : undefined;
      setSignIn({ state: "working", step: "Exchanging the code at the token endpoint…" });
      try {
        const code = codeOf(response, pending);
        const flow = pending as PendingSignIn;
        if (!server || !flow.tokenEndpoint || !flow.redirectUri || !flow.codeVerifier || !flow.issuer) {
          throw new Error("this page's sign-in record is incomplete: sign in again");
        }
        const tokens = await exchangeCode({
          issuer: flow.issuer,
          tokenEndpoint: flow.tokenEndpoint,
          clientId: flow.clientId,
          code,
          redirectUri: flow.redirectUri,
          codeVerifier: flow.codeVerifier,
          ...(flow.resource ? { resource: flow.resource } : {}),
          origin: window.location.origin,
        });
        signedIn.current?.signOut();
        const session: SignInSession = new SignInSession({
          serverUrl: server,
          ...(flow.resource ? { resource: flow.resource } : {}),
          issuer: flow.issuer,
          tokenEndpoint: flow.tokenEndpoint,
          clientId: flow.clientId,
          origin: window.location.origin,
          tokens,
          onRenewed: (renewed) => {
            if (signedIn.current === renewed) {
              setSignIn(signedInState(renewed));
            }
          },
          onSignedOut: (error) => {
            if (signedIn.current === session) {
              signedIn.current = undefined;
              setSignIn({ state: "error", message: error.message });
            }
          },
        });
        signedIn.current = session;
        setSignIn(signedInState(session));
        await connect({ ...initial, serverUrl: server, signIn: session.accessTokens });
      } catch (error) {
        setSignIn({ state: "error", message: `Sign in failed: ${messageOf(error)}` });
        const first = server ? { ...initial, serverUrl: server } : initial;
        if (canConnect(first.serverUrl, config, window.location)) {
          await connect(first);
        }
      }
    },
    [config, connect, initial],
  );

  const signOut = useCallback(() => {
    const session = signedIn.current;
    signedIn.current = undefined;
    session?.signOut();
    setSignIn({ state: "idle" });
    if (session && credentials.signIn === session.accessTokens) {
      const { signIn: _dropped, ...rest } = credentials;
      void connect(rest);
    }
  }, [connect, credentials]);

  const started = useRef(false);
  useEffect(() => {
    if (started.current) {
      return;
    }
    started.current = true;
    const { response, pending } = readStartup();
    if (response && pending?.phase === "authorize" && pending.tokenEndpoint) {
      const tokenOrigin = new URL(pending.tokenEndpoint).origin;
      if (!canConnect(pending.tokenEndpoint, config, window.location)) {
        // The redirect URI has no `auth=`: the page reloads once more to be let call the token endpoint.
        savePendingSignIn(window.sessionStorage, { ...pending, phase: "exchange", response });
        window.location.replace(withAuthOrigin(window.location.href, tokenOrigin));
        return;
      }
    }
    const answered = response ?? (pending?.phase === "exchange" ? pending.response : undefined);
    if (answered) {
      void finishSignIn(answered, pending);
      return;
    }
    const resumed = pending?.phase === "reload" ? pending : undefined;
    const first =
      resumed && canConnect(resumed.serverUrl, config, window.location)
        ? { ...initial, serverUrl: resumed.serverUrl }
        : initial;
    if (canConnect(first.serverUrl, config, window.location)) {
      void connect(first).then(() => (resumed ? startSignIn(resumed.clientId, resumed.issuer) : undefined));
    }
  }, [config, connect, finishSignIn, initial, startSignIn]);

  const connected = connection.state === "connected" ? connection : undefined;
  const tools = connected?.list.tools ?? [];
  const extensions = connected?.extensions ?? [];
  const searchOffered = extensions.includes("search");
  const fromSearch = picked && picked.id === selected ? picked : undefined;
  const tool = fromSearch ? fromSearch.tool : tools.find((candidate) => candidate.id === selected);
  const record = useCallback((entry: HistoryEntry) => setHistory((entries) => [entry, ...entries]), []);
  const docsUrl = window.location.pathname.replace(/inspector\/?$/, "docs");

  return (
    <div className="app">
      <header>
        <h1>OXP Inspector</h1>
        <a href={docsUrl}>API reference</a>
      </header>
      <ConnectionForm config={config} initial={initial} connection={connection} onConnect={connectWith} />
      {(discovered?.discovery?.extensions.includes("oauth") || signIn.state !== "idle") && (
        <SignInView
          signIn={signIn}
          redirectUri={redirectUriOf(window.location.href)}
          {...(resourceInfo && resourceInfo.serverUrl === discovered?.serverUrl
            ? {
                authorizationServers: resourceInfo.metadata.authorizationServers,
                issuer: resourceInfo.issuer,
                onChoose: chooseServer,
              }
            : {})}
          onSignIn={(clientId) =>
            void startSignIn(
              clientId,
              resourceInfo?.serverUrl === discovered?.serverUrl ? resourceInfo?.issuer : undefined,
            )
          }
          onSignOut={signOut}
        />
      )}
      {connected?.extensions.includes("connections") && (
        <ConnectionsView
          key={`${connected.session}`}
          credentials={credentials}
          providers={connected.discovery?.extension_info?.connections?.providers ?? []}
        />
      )}
      <div className="workspace">
        <div className="sidebar">
          {connected && (
            <CatalogControls
              key={connected.session}
              list={connected.list}
              onFilter={(toolkit) => void filter(toolkit)}
            />
          )}
          <ToolList
            key={connected?.session ?? 0}
            tools={tools}
            annotated={extensions.includes("annotations")}
            partial={connected ? !connected.list.done : false}
            selected={selected}
            onSelect={choose}
            {...(connected && searchOffered
              ? {
                  search: {
                    found,
                    onSearch: (query: string) => void search(query, connected.list.toolkit),
                    onPick: (id: string) => void pick(id),
                  },
                }
              : {})}
          />
          {searchOffered && <MoreResults found={found} onMore={() => void moreResults()} />}
          {connected && extensions.includes("pagination") && !(found?.answer || found?.error) && (
            <LoadMore list={connected.list} onMore={() => void loadMore()} />
          )}
        </div>
        <main>
          {fromSearch?.error && (
            <p role="alert" className="bad">
              {fromSearch.error}
            </p>
          )}
          {fromSearch && !fromSearch.tool && !fromSearch.error && (
            <p role="status" aria-label="Definition status" className="empty">
              Loading the definition of {fromSearch.id}…
            </p>
          )}
          {tool ? (
            <ToolView key={tool.id} tool={tool} credentials={credentials} extensions={extensions} onRecord={record} />
          ) : fromSearch ? null : (
            <p className="empty">{connected ? "Choose a tool to see its definition and call it." : ""}</p>
          )}
        </main>
      </div>
      <HistoryView entries={history} />
    </div>
  );
}
