/** The Inspector page: connection form, tool list (paged, by toolkit), the selected tool (definition and call) and the session's history. */
import { type OxpClient, OxpConnectionError } from "@otc/client";
import type { ToolDefinition } from "@otc/types";
import { type FormEvent, useCallback, useEffect, useMemo, useRef, useState } from "react";
import { deprecationOf, isDestructive, titleOf } from "./annotations.js";
import { type Catalog, openCatalog } from "./catalog.js";
import { type HistoryEntry, HistoryView } from "./History.js";
import { fromError } from "./outcome.js";
import {
  type Credentials,
  canConnect,
  clientFor,
  DEFAULT_JWT_SUBJECT,
  defaultServerUrl,
  type PageConfig,
  readPageConfig,
} from "./session.js";
import { ToolView } from "./ToolView.js";

/** The extensions the page knows how to use (docs/protocol.md 9), as discovery documents name them. */
const KNOWN_EXTENSIONS = ["annotations", "tasks", "pagination"];

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
      list: ToolsState;
    }
  | { state: "error"; message: string };

/** The message of a failed listing, as the connection status shows it. */
function listingError(error: unknown, serverUrl: string): string {
  const outcome = fromError(error, serverUrl);
  if (outcome.kind === "unauthenticated") {
    return `Authentication failed: ${outcome.message}${outcome.developerMessage ? ` (${outcome.developerMessage})` : ""}. Enter an API key or a JWT secret.`;
  }
  return "message" in outcome ? `Could not list the tools: ${outcome.message}` : "Could not list the tools";
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
export function splitToolId(tool: ToolDefinition): { toolkit: string; name: string } {
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
  const field = (name: keyof Credentials) => ({
    value: credentials[name],
    onChange: (event: { target: { value: string } }) => setCredentials({ ...credentials, [name]: event.target.value }),
  });
  // Secrets are uncontrolled: React mirrors a controlled input's value into its `value` attribute, into the DOM.
  const secret = (name: "apiKey" | "jwtSecret") => ({ defaultValue: "", onChange: field(name).onChange });
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
function badgesOf(tool: ToolDefinition): string[] {
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

function ToolList(props: {
  tools: ToolDefinition[];
  /** True when the server listed annotations: the list shows their marks and searches titles. */
  annotated: boolean;
  /** True while more tools may follow: the search then says it searches the loaded ones. */
  partial: boolean;
  selected: string | undefined;
  onSelect: (id: string) => void;
}) {
  const [query, setQuery] = useState("");
  const groups = useMemo(() => {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const byToolkit = new Map<string, ToolDefinition[]>();
    for (const tool of props.tools) {
      const title = props.annotated ? (titleOf(tool) ?? "") : "";
      const text = `${tool.id} ${tool.name} ${tool.description} ${title}`.toLowerCase();
      if (!words.every((word) => text.includes(word))) {
        continue;
      }
      const { toolkit } = splitToolId(tool);
      byToolkit.set(toolkit, [...(byToolkit.get(toolkit) ?? []), tool]);
    }
    return [...byToolkit.entries()].sort(([a], [b]) => a.localeCompare(b));
  }, [props.tools, props.annotated, query]);
  return (
    <nav className="tools" aria-label="Tools">
      <input
        type="search"
        aria-label="Search tools"
        placeholder={props.partial ? "Search the loaded tools" : "Search by name or description"}
        value={query}
        onChange={(event) => setQuery(event.target.value)}
      />
      {groups.length === 0 && <p className="empty">No tool matches.</p>}
      {groups.map(([toolkit, tools]) => (
        <section key={toolkit} aria-label={`Toolkit ${toolkit}`}>
          <h3>{toolkit}</h3>
          <ul>
            {[...tools]
              .sort((a, b) => a.id.localeCompare(b.id, undefined, { numeric: true }))
              .map((tool) => {
                const title = props.annotated ? titleOf(tool) : undefined;
                const badges = props.annotated ? badgesOf(tool) : [];
                return (
                  <li key={tool.id}>
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
                  </li>
                );
              })}
          </ul>
        </section>
      ))}
    </nav>
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

export function App() {
  const config = useMemo(readPageConfig, []);
  const initial = useMemo<Credentials>(
    () => ({
      serverUrl: defaultServerUrl(config, window.location),
      apiKey: "",
      jwtSecret: "",
      jwtAudience: "",
      jwtSubject: DEFAULT_JWT_SUBJECT,
    }),
    [config],
  );
  const [credentials, setCredentials] = useState<Credentials>(initial);
  const [connection, setConnection] = useState<Connection>({ state: "idle" });
  const [selected, setSelected] = useState<string>();
  const [history, setHistory] = useState<HistoryEntry[]>([]);
  const attempt = useRef(0);
  /** The connection's client and the catalog being read: a page that comes for another one is dropped. */
  const reading = useRef<{ client: OxpClient; catalog: Catalog; serverUrl: string; extensions: string[] }>(undefined);

  const connect = useCallback(async (next: Credentials) => {
    const mine = ++attempt.current;
    reading.current?.catalog.close();
    reading.current = undefined;
    setCredentials(next);
    setConnection({ state: "connecting" });
    const client = clientFor(next);
    try {
      // Served without credentials; a server without it (404), or that answers it with an error, is an OXP 1.0 server.
      const offered = await client.discover().then(
        (document) => document.extensions,
        () => [],
      );
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
        note = `The server offers ${extensions.join(", ")}, but its CORS policy does not let this page ask for them (the OXP-Extensions header): the page uses OXP 1.0 alone.`;
        extensions = [];
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
        ...(note ? { note } : {}),
        list: { tools: page.tools, toolkit: "", done: page.done, loading: false },
      });
    } catch (error) {
      if (mine === attempt.current) {
        setConnection({ state: "error", message: listingError(error, next.serverUrl) });
      }
    }
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
    [updateList],
  );

  useEffect(() => {
    if (canConnect(initial.serverUrl, config, window.location)) {
      void connect(initial);
    }
  }, [config, connect, initial]);

  const connected = connection.state === "connected" ? connection : undefined;
  const tools = connected?.list.tools ?? [];
  const extensions = connected?.extensions ?? [];
  const tool = tools.find((candidate) => candidate.id === selected);
  const record = useCallback((entry: HistoryEntry) => setHistory((entries) => [entry, ...entries]), []);
  const docsUrl = window.location.pathname.replace(/inspector\/?$/, "docs");

  return (
    <div className="app">
      <header>
        <h1>OXP Inspector</h1>
        <a href={docsUrl}>API reference</a>
      </header>
      <ConnectionForm config={config} initial={initial} connection={connection} onConnect={connect} />
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
            tools={tools}
            annotated={extensions.includes("annotations")}
            partial={connected ? !connected.list.done : false}
            selected={selected}
            onSelect={setSelected}
          />
          {connected && extensions.includes("pagination") && (
            <LoadMore list={connected.list} onMore={() => void loadMore()} />
          )}
        </div>
        <main>
          {tool ? (
            <ToolView key={tool.id} tool={tool} credentials={credentials} extensions={extensions} onRecord={record} />
          ) : (
            <p className="empty">{connected ? "Choose a tool to see its definition and call it." : ""}</p>
          )}
        </main>
      </div>
      <HistoryView entries={history} />
    </div>
  );
}
