// The ufo console page. Every text that comes from a session (requests, titles, control
// names, model output) is set with textContent, never parsed as HTML.
"use strict";

const $ = (id) => document.getElementById(id);
let csrf = sessionStorage.getItem("ufo_csrf") || "";
let source = null;
let viewTimer = null;
let listTimer = null;
let current = null;
let ask = null;

function show(view) {
  for (const v of ["login-view", "list-view", "session-view", "batch-view"]) {
    $(v).hidden = v !== view;
  }
  $("logout").hidden = view === "login-view";
}

async function api(method, path, body) {
  const opts = { method, headers: {}, credentials: "same-origin" };
  if (method !== "GET") {
    opts.headers["X-CSRF-Token"] = csrf;
    opts.headers["Content-Type"] = "application/json";
    opts.body = JSON.stringify(body || {});
  }
  const r = await fetch(path, opts);
  if (r.status === 401) {
    stopSession();
    show("login-view");
    throw new Error("log in again");
  }
  const text = await r.text();
  let data = null;
  try { data = JSON.parse(text); } catch (_) { data = { error: text }; }
  if (!r.ok) throw new Error((data && data.error) || ("HTTP " + r.status));
  return data;
}

function cell(tr, text, cls) {
  const td = document.createElement("td");
  td.textContent = text;
  if (cls) td.className = cls;
  tr.appendChild(td);
  return td;
}

async function refreshList() {
  let rows, batches;
  try {
    rows = await api("GET", "/api/sessions");
    batches = await api("GET", "/api/batches");
  } catch (_) { return; }
  const body = $("sessions").tBodies[0];
  body.replaceChildren();
  for (const s of rows) {
    const tr = document.createElement("tr");
    tr.className = "row";
    tr.dataset.id = s.id;
    cell(tr, s.id);
    cell(tr, s.request);
    const st = cell(tr, "");
    const badge = document.createElement("span");
    badge.className = "status " + String(s.status).replace(/[^A-Z]/g, "");
    badge.textContent = s.asking ? s.status + " (asking)" : s.status;
    st.appendChild(badge);
    cell(tr, String(s.steps));
    cell(tr, Number(s.cost).toFixed(4));
    cell(tr, s.started);
    tr.addEventListener("click", () => { location.hash = "#/session/" + encodeURIComponent(s.id); });
    body.appendChild(tr);
  }
  const bb = $("batches").tBodies[0];
  bb.replaceChildren();
  for (const b of batches) {
    const tr = document.createElement("tr");
    tr.className = "row";
    cell(tr, b.id);
    cell(tr, b.done + " / " + b.total + (b.finished ? " (finished)" : ""));
    cell(tr, String(b.passed));
    cell(tr, String(b.failed));
    cell(tr, Number(b.per_minute).toFixed(2));
    tr.addEventListener("click", () => { location.hash = "#/batch/" + encodeURIComponent(b.id); });
    bb.appendChild(tr);
  }
}

function stopSession() {
  if (source) { source.close(); source = null; }
  if (viewTimer) { clearInterval(viewTimer); viewTimer = null; }
  current = null;
}

function showAsk(a) {
  ask = a;
  $("ask").hidden = !a;
  if (!a) return;
  const confirm = a.kind === "confirm";
  $("ask-title").textContent = confirm
    ? a.agent + " asks to confirm this action"
    : a.agent + " asks";
  $("ask-text").textContent = a.text;
  $("ask-confirm").hidden = !confirm;
  $("ask-pending").hidden = confirm;
  $("ask-answer").value = "";
}

function setStatus(text) {
  const st = $("s-status");
  st.textContent = text;
  st.className = "status " + String(text).replace(/[^A-Z]/g, "");
}

function onState(s) {
  showAsk(s.asking || null);
  const priv = s.desktop === "private";
  const taken = !!s.taken;
  $("takeover").hidden = !priv || taken;
  $("handback").hidden = !taken;
  $("takeover-view").hidden = !taken;
  if (taken && !viewTimer) {
    refreshView();
    viewTimer = setInterval(refreshView, 1000);
  } else if (!taken && viewTimer) {
    clearInterval(viewTimer);
    viewTimer = null;
  }
}

let viewCount = 0;
function refreshView() {
  if (!current) return;
  viewCount += 1;
  $("view").src = "/api/sessions/" + encodeURIComponent(current) + "/view?n=" + viewCount;
}

function showPlan(plan) {
  const items = plan.map((p) => {
    const li = document.createElement("li");
    li.textContent = String(p);
    return li;
  });
  $("s-plan").replaceChildren(...items);
  $("s-plan-line").hidden = items.length === 0;
}

let shotCount = 0;
function onRecord(r) {
  if (r.type === "session_start") $("s-request").textContent = r.request || "";
  if (r.type === "step") {
    if (r.subtask) $("s-subtask").textContent = r.subtask;
    // The host's plan as it stands after its step (absent when empty or on an app's step).
    if (r.role === "host") showPlan(Array.isArray(r.plan) ? r.plan : []);
    shotCount += 1;
    $("shot").src = "/api/sessions/" + encodeURIComponent(current) + "/screenshot?n=" + shotCount;
  }
  if (r.type === "session_end") setStatus(r.status || "");
  // the record comes through the file, later than the socket's state: the next question may
  // already be shown, so hide only the one it closes
  if (r.type === "answered" && ask && ask.id === r.id) showAsk(null);
}

function openSession(id) {
  stopSession();
  current = id;
  show("session-view");
  $("s-id").textContent = id;
  setStatus("RUNNING");
  for (const f of ["s-request", "s-subtask", "s-plan", "s-error", "lines"]) $(f).textContent = "";
  $("shot").removeAttribute("src");
  $("s-plan-line").hidden = true;
  showAsk(null);
  onState({});
  $("report").href = "/api/sessions/" + encodeURIComponent(id) + "/report";
  source = new EventSource("/api/sessions/" + encodeURIComponent(id) + "/events");
  source.addEventListener("record", (e) => {
    try { onRecord(JSON.parse(e.data)); } catch (_) { /* not JSON: skipped */ }
  });
  source.addEventListener("progress", (e) => {
    const lines = $("lines");
    const div = document.createElement("div");
    div.className = "line";
    div.textContent = e.data;
    lines.appendChild(div);
    lines.scrollTop = lines.scrollHeight;
  });
  source.addEventListener("state", (e) => {
    try { onState(JSON.parse(e.data)); } catch (_) { /* ignored */ }
  });
  source.addEventListener("end", () => {
    if ($("s-status").textContent === "RUNNING") setStatus("ENDED");
    onState({});
    if (source) { source.close(); source = null; }
  });
}

async function control(op, body) {
  if (!current) return;
  $("s-error").textContent = "";
  try {
    await api("POST", "/api/sessions/" + encodeURIComponent(current) + "/" + op, body);
    // the next question may have come (through the event stream) while this answer was on
    // its way: hide only the question this answer closed
    if (op === "answer" && ask && body && ask.id === body.id) showAsk(null);
  } catch (e) {
    $("s-error").textContent = e.message;
  }
}

let batchTimer = null;

function stopBatch() {
  if (batchTimer) { clearInterval(batchTimer); batchTimer = null; }
}

// The batch view is read again every second until the batch has written its results.
function openBatch(id) {
  stopSession();
  stopBatch();
  show("batch-view");
  $("b-id").textContent = id;
  $("b-counts").textContent = "";
  $("b-summary").textContent = "";
  $("b-results").tBodies[0].replaceChildren();
  refreshBatch(id);
  batchTimer = setInterval(() => refreshBatch(id), 1000);
}

async function refreshBatch(id) {
  let b;
  try {
    b = await api("GET", "/api/batches/" + encodeURIComponent(id));
  } catch (e) {
    $("b-counts").textContent = e.message;
    return;
  }
  if ($("batch-view").hidden || $("b-id").textContent !== id) return;
  $("b-counts").textContent = b.done + " of " + b.total + " tasks done: " + b.passed +
    " passed, " + b.failed + " failed, " + b.skipped + " skipped, " + b.error + " error; " +
    Number(b.per_minute).toFixed(2) + " tasks per minute" + (b.finished ? " (finished)" : "");
  $("b-summary").textContent = b.summary;
  const results = (b.results || []).slice();
  if (!b.finished) results.sort((x, y) => (x.id < y.id ? -1 : x.id > y.id ? 1 : 0));
  const body = $("b-results").tBodies[0];
  body.replaceChildren();
  for (const r of results) {
    const tr = document.createElement("tr");
    cell(tr, r.id);
    cell(tr, r.app);
    cell(tr, r.status, "status " + String(r.status).toUpperCase().replace(/[^A-Z]/g, ""));
    cell(tr, String(r.steps));
    cell(tr, Number(r.time_s || 0).toFixed(1));
    cell(tr, r.reason);
    body.appendChild(tr);
  }
  if (b.finished) stopBatch();
}

function route() {
  stopBatch();
  const h = location.hash;
  if (h.startsWith("#/session/")) return openSession(decodeURIComponent(h.slice(10)));
  if (h.startsWith("#/batch/")) return openBatch(decodeURIComponent(h.slice(8)));
  stopSession();
  show("list-view");
  refreshList();
}

async function start() {
  try {
    await api("GET", "/api/sessions");
  } catch (_) {
    show("login-view");
    return;
  }
  route();
}

document.addEventListener("DOMContentLoaded", () => {
  $("login-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("login-error").textContent = "";
    const r = await fetch("/login", {
      method: "POST",
      headers: { "Content-Type": "application/json" },
      body: JSON.stringify({ token: $("token").value.trim() }),
      credentials: "same-origin",
    });
    let data = {};
    try { data = await r.json(); } catch (_) { /* empty */ }
    if (!r.ok) {
      $("login-error").textContent = data.error || ("HTTP " + r.status);
      return;
    }
    csrf = data.csrf;
    sessionStorage.setItem("ufo_csrf", csrf);
    $("token").value = "";
    route();
  });
  $("logout").addEventListener("click", async () => {
    try { await api("POST", "/logout"); } catch (_) { /* logged out anyway */ }
    sessionStorage.removeItem("ufo_csrf");
    stopSession();
    show("login-view");
  });
  $("start-form").addEventListener("submit", async (e) => {
    e.preventDefault();
    $("start-error").textContent = "";
    const body = { request: $("start-request").value, confirm: $("start-confirm").value };
    if ($("start-desktop").value.trim()) body.desktop = $("start-desktop").value.trim();
    if ($("start-llm").value.trim()) body.llm = $("start-llm").value.trim();
    if ($("start-max-steps").value) body.max_steps = Number($("start-max-steps").value);
    try {
      const r = await api("POST", "/api/sessions", body);
      location.hash = "#/session/" + encodeURIComponent(r.id);
    } catch (err) {
      $("start-error").textContent = err.message;
    }
  });
  $("back").addEventListener("click", (e) => { e.preventDefault(); location.hash = ""; route(); });
  $("batch-back").addEventListener("click", (e) => { e.preventDefault(); location.hash = ""; route(); });
  $("approve").addEventListener("click", () => ask && control("answer", { id: ask.id, approve: true }));
  $("reject").addEventListener("click", () => ask && control("answer", { id: ask.id, approve: false }));
  $("ask-pending").addEventListener("submit", (e) => {
    e.preventDefault();
    if (ask) control("answer", { id: ask.id, text: $("ask-answer").value });
  });
  $("cancel").addEventListener("click", () => control("cancel"));
  $("takeover").addEventListener("click", () => control("takeover"));
  $("handback").addEventListener("click", () => control("handback"));
  $("view").addEventListener("click", (e) => {
    const img = e.target;
    const x = Math.round(e.offsetX * img.naturalWidth / img.clientWidth);
    const y = Math.round(e.offsetY * img.naturalHeight / img.clientHeight);
    control("input", { click: { x, y, button: 1 } }).then(refreshView);
  });
  $("keys-form").addEventListener("submit", (e) => {
    e.preventDefault();
    const v = $("keys").value;
    const body = /^\{.*\}$/.test(v) ? { keys: v } : { text: v };
    control("input", body).then(refreshView);
    $("keys").value = "";
  });
  window.addEventListener("hashchange", route);
  listTimer = setInterval(() => { if (!$("list-view").hidden) refreshList(); }, 3000);
  start();
});
