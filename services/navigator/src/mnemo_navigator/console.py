"""The Control Plane console: one read-only page served by the navigator at `/console`.

The page itself holds no data and needs no token; everything it shows comes from the catalogue API
(`mnemo_navigator.catalogue_routes`), called by the page's script with the bearer token the operator
pastes in (kept in the tab's sessionStorage, never in a URL). The list asks for `?include=all`, which
needs the `admin` scope: a token without it sees the API's 403 and nothing else. Views: the corpus
list with counts per status, a corpus's detail with a JSON inspector of its row and definition, its
Uses panel (every route version whose scope names it), and the routes. Text from the registry is
inserted as text (`textContent`), never as markup, and the page allows no script but its own.
"""

from __future__ import annotations

import base64
import hashlib

from fastapi import APIRouter
from fastapi.responses import HTMLResponse

PATH = "/console"

_SECURITY_HEADERS = {
    "Content-Security-Policy": (
        "default-src 'none'; script-src 'sha256-{hash}'; style-src 'unsafe-inline'; "
        "connect-src 'self'; img-src 'self' data:; base-uri 'none'; form-action 'none'; "
        "frame-ancestors 'none'"
    ),
    "X-Content-Type-Options": "nosniff",
    "Referrer-Policy": "no-referrer",
    "Cache-Control": "no-store",
}

_PAGE = """<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Mnemo Control Plane</title>
<style>
 body { font: 14px system-ui, sans-serif; margin: 0; color: #1b1f24; background: #f6f7f9; }
 header { background: #1b1f24; color: #fff; padding: 10px 20px; display: flex; gap: 16px;
          align-items: center; }
 header h1 { font-size: 16px; margin: 0; flex: 1; }
 header input { width: 360px; }
 nav button { margin-right: 6px; }
 main { padding: 16px 20px; }
 table { border-collapse: collapse; background: #fff; width: 100%; }
 th, td { border-bottom: 1px solid #dde1e6; padding: 6px 8px; text-align: left; }
 tr.row { cursor: pointer; } tr.row:hover { background: #eef3ff; }
 .counts span { display: inline-block; margin-right: 14px; padding: 4px 10px; border-radius: 10px;
                background: #e6e9ee; }
 .status-published { color: #116329; } .status-draft { color: #7d4e00; }
 .status-deprecated { color: #82071e; }
 pre.json { background: #0d1117; color: #e6edf3; padding: 12px; overflow: auto; max-height: 420px; }
 .panel { background: #fff; padding: 12px; margin: 12px 0; border: 1px solid #dde1e6; }
 .error { color: #82071e; font-weight: 600; }
 [hidden] { display: none !important; }
</style>
</head>
<body>
<header>
 <h1>Mnemo Control Plane <small>(read-only)</small></h1>
 <label>Admin token <input id="token" type="password" autocomplete="off"
   placeholder="paste a token with the admin scope"></label>
 <button id="connect">Connect</button>
</header>
<main>
 <nav><button id="show-corpora">Corpora</button><button id="show-routes">Routes</button></nav>
 <p id="error" class="error" role="alert"></p>
 <section id="corpora-view" hidden>
  <h2>Corpora</h2>
  <div id="counts" class="counts"></div>
  <table id="corpora"><thead><tr><th>Corpus</th><th>Display name</th><th>Status</th><th>Kind</th>
   <th>Owner</th><th>Updated</th></tr></thead><tbody></tbody></table>
 </section>
 <section id="detail-view" hidden>
  <h2 id="detail-title"></h2>
  <button id="back">Back to the list</button>
  <div class="panel"><h3>Inspector</h3><pre id="inspector" class="json"></pre></div>
  <div class="panel" id="uses-panel"><h3>Uses</h3>
   <p id="uses-empty" hidden>No route names this corpus in its scope.</p>
   <table id="uses"><thead><tr><th>Route</th><th>Version</th><th>Mode</th><th>Active</th>
    <th>Scope</th></tr></thead><tbody></tbody></table></div>
 </section>
 <section id="routes-view" hidden>
  <h2>Routes</h2>
  <table id="routes"><thead><tr><th>Route</th><th>Version</th><th>Mode</th><th>Active</th>
   <th>Scope</th></tr></thead><tbody></tbody></table>
 </section>
</main>
<script>{script}</script>
</body>
</html>
"""

SCRIPT = """"use strict";
const $ = (id) => document.getElementById(id);
const views = ["corpora-view", "detail-view", "routes-view"];
function show(view) { for (const v of views) $(v).hidden = v !== view; }
function cell(row, text, cls) {
  const td = document.createElement("td"); td.textContent = text == null ? "" : String(text);
  if (cls) td.className = cls; row.appendChild(td); return td;
}
async function api(path) {
  const token = sessionStorage.getItem("mnemo.token") || "";
  const response = await fetch(path, { headers: { Authorization: "Bearer " + token } });
  const body = await response.json().catch(() => ({}));
  if (!response.ok) {
    const e = body.error || {};
    throw new Error((e.code || response.status) + ": " + (e.message || response.statusText));
  }
  $("error").textContent = "";
  return body;
}
function fail(error) { $("error").textContent = error.message; }
function routeRows(tbody, routes) {
  tbody.replaceChildren();
  for (const r of routes) {
    const tr = document.createElement("tr");
    cell(tr, r.route_id); cell(tr, r.route_version); cell(tr, r.mode);
    cell(tr, r.active ? "yes" : "no"); cell(tr, r.scope.join(", "));
    tbody.appendChild(tr);
  }
}
async function listCorpora() {
  const data = await api("/v1/catalog/corpora?include=all");
  const counts = $("counts"); counts.replaceChildren();
  for (const [status, n] of Object.entries(data.counts || {})) {
    const s = document.createElement("span"); s.dataset.status = status;
    s.textContent = status + ": " + n; counts.appendChild(s);
  }
  const tbody = $("corpora").tBodies[0]; tbody.replaceChildren();
  for (const c of data.corpora) {
    const tr = document.createElement("tr"); tr.className = "row"; tr.dataset.corpus = c.corpus_id;
    cell(tr, c.corpus_id); cell(tr, c.display_name); cell(tr, c.status, "status-" + c.status);
    cell(tr, c.kind); cell(tr, c.owner); cell(tr, c.updated_at);
    tr.addEventListener("click", () => detail(c.corpus_id).catch(fail));
    tbody.appendChild(tr);
  }
  show("corpora-view");
}
async function detail(id) {
  const data = await api("/v1/catalog/corpora/" + encodeURIComponent(id));
  $("detail-title").textContent = "Corpus " + data.corpus_id;
  const row = Object.assign({}, data); delete row.uses;
  $("inspector").textContent = JSON.stringify(row, null, 2);
  routeRows($("uses").tBodies[0], data.uses);
  $("uses-empty").hidden = data.uses.length > 0;
  show("detail-view");
}
async function listRoutes() {
  const data = await api("/v1/catalog/routes");
  routeRows($("routes").tBodies[0], data.routes);
  show("routes-view");
}
$("connect").addEventListener("click", () => {
  sessionStorage.setItem("mnemo.token", $("token").value.trim()); $("token").value = "";
  listCorpora().catch(fail);
});
$("show-corpora").addEventListener("click", () => listCorpora().catch(fail));
$("show-routes").addEventListener("click", () => listRoutes().catch(fail));
$("back").addEventListener("click", () => listCorpora().catch(fail));
if (sessionStorage.getItem("mnemo.token")) listCorpora().catch(fail);
"""
PAGE = _PAGE.replace("{script}", SCRIPT)
_SCRIPT_HASH = base64.b64encode(hashlib.sha256(SCRIPT.encode("utf-8")).digest()).decode()


def console_router() -> APIRouter:
    router = APIRouter()

    @router.get(PATH, response_class=HTMLResponse, include_in_schema=False)
    async def console() -> HTMLResponse:
        headers = dict(_SECURITY_HEADERS)
        policy = headers["Content-Security-Policy"].replace("{hash}", _SCRIPT_HASH)
        headers["Content-Security-Policy"] = policy
        return HTMLResponse(PAGE, headers=headers)

    return router
