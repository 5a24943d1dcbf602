/** Mounts Scalar's API reference on the /docs page, with its configuration read from the page (no inline script). */
(() => {
  const config = JSON.parse(document.getElementById("docs-config").textContent);
  // `base` is the server's root, absolute or relative to this page (the prefix it is mounted under, if any).
  const server = new URL(`${config.base}/`, window.location.href).href.replace(/\/$/, "");
  window.Scalar.createApiReference("#app", {
    url: config.url,
    // Everything the page loads comes from this server: no web fonts, no telemetry, no proxy, no AI agent.
    withDefaultFonts: false,
    telemetry: false,
    agent: { disabled: true },
    mcp: { disabled: true },
    hideClientButton: false,
    showDeveloperTools: "never",
    servers: [{ url: server, description: "This server" }],
    baseServerURL: server,
    documentDownloadType: "json",
    // Try-it requests go straight to this server, never through a proxy on the internet.
    proxyUrl: "",
  });
})();
