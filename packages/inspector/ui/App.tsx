/** The Inspector page: connection form, tool list, the selected tool (definition and call) and the session's history. */
import type { ToolDefinition } from "@otc/types";
import { type FormEvent, useCallback, useEffect, useMemo, useRef, useState } from "react";
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

type Connection =
  | { state: "idle" | "connecting" }
  | { state: "connected"; tools: ToolDefinition[]; serverUrl: string }
  | { state: "error"; message: string };

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
        {connection.state === "connected" &&
          `Connected to ${connection.serverUrl}: ${connection.tools.length} tool${connection.tools.length === 1 ? "" : "s"}`}
        {connection.state === "error" && connection.message}
        {connection.state === "idle" && "Not connected"}
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

function ToolList(props: { tools: ToolDefinition[]; selected: string | undefined; onSelect: (id: string) => void }) {
  const [query, setQuery] = useState("");
  const groups = useMemo(() => {
    const words = query.toLowerCase().split(/\s+/).filter(Boolean);
    const byToolkit = new Map<string, ToolDefinition[]>();
    for (const tool of props.tools) {
      const text = `${tool.id} ${tool.name} ${tool.description}`.toLowerCase();
      if (!words.every((word) => text.includes(word))) {
        continue;
      }
      const { toolkit } = splitToolId(tool);
      byToolkit.set(toolkit, [...(byToolkit.get(toolkit) ?? []), tool]);
    }
    return [...byToolkit.entries()].sort(([a], [b]) => a.localeCompare(b));
  }, [props.tools, query]);
  return (
    <nav className="tools" aria-label="Tools">
      <input
        type="search"
        aria-label="Search tools"
        placeholder="Search by name or description"
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
              .map((tool) => (
                <li key={tool.id}>
                  <button
                    type="button"
                    aria-label={tool.id}
                    aria-pressed={props.selected === tool.id}
                    title={tool.description}
                    onClick={() => props.onSelect(tool.id)}
                  >
                    <span className="tool-name">{splitToolId(tool).name}</span>
                    <span className="tool-version">{tool.version}</span>
                  </button>
                </li>
              ))}
          </ul>
        </section>
      ))}
    </nav>
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

  const connect = useCallback(async (next: Credentials) => {
    const mine = ++attempt.current;
    setCredentials(next);
    setConnection({ state: "connecting" });
    try {
      const tools = await clientFor(next).listTools();
      if (mine === attempt.current) {
        setConnection({ state: "connected", tools, serverUrl: next.serverUrl });
      }
    } catch (error) {
      const outcome = fromError(error, next.serverUrl);
      const message =
        outcome.kind === "unauthenticated"
          ? `Authentication failed: ${outcome.message}${outcome.developerMessage ? ` (${outcome.developerMessage})` : ""}. Enter an API key or a JWT secret.`
          : "message" in outcome
            ? `Could not list the tools: ${outcome.message}`
            : "Could not list the tools";
      if (mine === attempt.current) {
        setConnection({ state: "error", message });
      }
    }
  }, []);

  useEffect(() => {
    if (canConnect(initial.serverUrl, config, window.location)) {
      void connect(initial);
    }
  }, [config, connect, initial]);

  const tools = connection.state === "connected" ? connection.tools : [];
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
        <ToolList tools={tools} selected={selected} onSelect={setSelected} />
        <main>
          {tool ? (
            <ToolView key={tool.id} tool={tool} credentials={credentials} onRecord={record} />
          ) : (
            <p className="empty">
              {connection.state === "connected" ? "Choose a tool to see its definition and call it." : ""}
            </p>
          )}
        </main>
      </div>
      <HistoryView entries={history} />
    </div>
  );
}
