// logd console: hash routes over the /v1/ JSON API. Plain JavaScript, no
// build step. Text is always set with textContent (never innerHTML), so
// record contents cannot inject markup.
"use strict";

const main = document.getElementById("main");
const statusLine = document.getElementById("status");
let tail = null; // the open EventSource of a topic page, closed on navigation
let refresh = null; // the topic page's partition table refresh timer

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (k.startsWith("on")) e.addEventListener(k.slice(2), v);
    else e.setAttribute(k, v);
  }
  for (const c of children.flat()) {
    if (c === null || c === undefined) continue;
    e.append(c instanceof Node ? c : String(c));
  }
  return e;
}

function table(headers, rows, id) {
  return el("table", id ? { id } : {},
    el("thead", {}, el("tr", {}, headers.map(h => el("th", { scope: "col" }, h)))),
    el("tbody", {}, rows.map(r => el("tr", {}, r.map(c => el("td", {}, c))))));
}

function bytes(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i ? n.toFixed(1) : n) + " " + u[i];
}

function duration(ms) {
  if (ms < 0) return "unlimited";
  const h = ms / 3600000;
  return h >= 24 ? (h / 24).toFixed(1) + " d" : h.toFixed(1) + " h";
}

// span is a time setting in ms, in the unit that reads best.
function span(ms) {
  if (ms < 0) return "unlimited";
  if (ms < 1000) return ms + " ms";
  if (ms < 60000) return (ms / 1000) + " s";
  if (ms < 3600000) return (ms / 60000).toFixed(1) + " min";
  return duration(ms);
}

// The cleanup policies (Kafka's cleanup.policy values).
const policies = ["delete", "compact", "compact,delete"];

function policySelect(id, value) {
  return el("select", { id, name: "cleanup.policy" },
    policies.map(p => { const o = el("option", { value: p }, p); if (p === value) o.selected = true; return o; }));
}

async function api(path, opts) {
  const r = await fetch(path, opts);
  const body = await r.json().catch(() => ({ error: r.statusText }));
  if (!r.ok && !(body && body.records)) throw new Error(body.error || r.statusText);
  return body;
}

function show(title, ...content) {
  main.replaceChildren(el("h1", {}, title), ...content);
  document.title = title + " · logd";
}

function say(msg) { statusLine.textContent = msg; }

// The charts: the cluster's record counters (/v1/cluster/record-counts:
// each node's records appended as leader and served to readers, by
// topic), sampled every sampleMs while the console is open, kept for the
// last maxSamples. A topic's produce or consume rate is, between two
// samples, each node's change per second summed over the nodes that
// answered both times (a counter that went down is a node that
// restarted: it counts from zero). A group's lag is the group page's own,
// which the group's partitions' leaders give, sampled as it refreshes.
const sampleMs = 5000, maxSamples = 60;
const samples = []; // {t, nodes: {node: {topic: {produced, fetched}}}}
const lagHistory = {}; // group -> [lag]

async function sample() {
  try {
    const r = await fetch("/v1/cluster/record-counts");
    if (!r.ok) return;
    const s = { t: Date.now(), nodes: {} };
    for (const n of (await r.json()).nodes) if (n.answered) s.nodes[n.node] = n.topics;
    samples.push(s);
    if (samples.length > maxSamples + 1) samples.shift();
  } catch (err) { /* no counts here: no charts */ }
}

// rates is a topic's per-second rates of kind ("produced" or "fetched")
// between consecutive samples, summed over the nodes.
function rates(topic, kind) {
  const out = [];
  for (let i = 1; i < samples.length; i++) {
    const a = samples[i - 1], b = samples[i];
    let sum = 0;
    for (const [node, topics] of Object.entries(b.nodes)) {
      if (!(node in a.nodes)) continue;
      const now = (topics[topic] || {})[kind] || 0, before = (a.nodes[node][topic] || {})[kind] || 0;
      sum += now >= before ? now - before : now;
    }
    out.push(sum / ((b.t - a.t) / 1000));
  }
  return out;
}

// spark is a small line chart of values (the last one's value beside it).
function spark(values, label, id) {
  const ns = "http://www.w3.org/2000/svg", w = 120, h = 24;
  const svg = document.createElementNS(ns, "svg");
  svg.setAttribute("viewBox", `0 0 ${w} ${h}`);
  svg.setAttribute("class", "spark");
  svg.setAttribute("role", "img");
  svg.setAttribute("aria-label", label);
  const top = Math.max(1, ...values);
  const pts = values.map((v, i) => `${values.length > 1 ? (i * w / (values.length - 1)).toFixed(1) : 0},${(h - 2 - v * (h - 4) / top).toFixed(1)}`);
  const line = document.createElementNS(ns, "polyline");
  line.setAttribute("points", pts.join(" "));
  svg.append(line);
  const last = values.length ? values[values.length - 1] : null;
  return el("span", id ? { class: "chart", id } : { class: "chart" }, svg, " ",
    last === null ? "…" : (last < 10 ? last.toFixed(1) : Math.round(last)) + (label.includes("lag") ? "" : "/s"));
}

async function topicsPage() {
  const { topics } = await api("/v1/topics");
  const rows = () => topics.map(t => {
    const hw = t.partition_info.reduce((s, p) => s + p.high_watermark - p.log_start, 0);
    const size = t.partition_info.reduce((s, p) => s + p.size_bytes, 0);
    return [el("a", { href: "#/topics/" + encodeURIComponent(t.name), class: "topic-link" }, t.name),
      t.partitions, t.replicas, hw, bytes(size), duration(t.retention_ms), t.cleanup_policy,
      spark(rates(t.name, "produced"), "produce rate of " + t.name), spark(rates(t.name, "fetched"), "consume rate of " + t.name)];
  });
  const headers = ["Topic", "Partitions", "Replicas", "Records", "Size", "Retention", "Cleanup", "Produce (cluster)", "Consume (cluster)"];
  let list = table(headers, rows(), "topics");
  show("Topics", topics.length ? list : el("p", { id: "topics" }, "No topics yet: create one below, or with logd topic create NAME."),
    createTopicForm());
  if (topics.length) {
    refresh = setInterval(() => { const fresh = table(headers, rows(), "topics"); list.replaceWith(fresh); list = fresh; }, sampleMs);
  }
}

// createTopicForm creates a topic (POST /v1/topics) and opens its page;
// a refusal shows the answer's error.
function createTopicForm() {
  const name = el("input", { id: "create-name", name: "name", placeholder: "name", required: "", "aria-label": "topic name" });
  const parts = el("input", { id: "create-partitions", name: "partitions", type: "number", min: "1", value: "1", "aria-label": "partitions" });
  const policy = policySelect("create-policy", "delete");
  const out = el("span", { id: "create-result", role: "status" });
  const form = el("form", { class: "create-topic" }, el("label", {}, "Name ", name), el("label", {}, "Partitions ", parts),
    el("label", {}, "Cleanup policy ", policy), el("button", { type: "submit" }, "Create"), out);
  form.addEventListener("submit", async e => {
    e.preventDefault();
    out.textContent = "";
    try {
      const t = await api("/v1/topics", { method: "POST", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ name: name.value.trim(), partitions: Number(parts.value), configs: { "cleanup.policy": policy.value } }) });
      location.hash = "#/topics/" + encodeURIComponent(t.name);
    } catch (err) { out.className = "error"; out.textContent = "failed: " + err.message; }
  });
  return el("section", {}, el("h2", {}, "Create topic"), form);
}

// settingsText is a topic's retention and cleanup settings, in words.
function settingsText(t) {
  const compacted = t.cleanup_policy !== "delete";
  return ["Cleanup policy ", t.cleanup_policy, ". Retention ", duration(t.retention_ms), ", ",
    t.retention_bytes < 0 ? "no size limit" : bytes(t.retention_bytes) + " per partition",
    t.cleanup_policy === "compact" ? " (not applied: compact alone deletes nothing by age or size)" : "", ".",
    compacted ? " Min compaction lag " + span(t.min_compaction_lag_ms) + ", tombstones kept " + span(t.delete_retention_ms) +
      ", cleaned at " + t.min_cleanable_dirty_ratio * 100 + "% dirty." : ""].join("");
}

// settingsForm changes a topic's cleanup policy, retention, min compaction
// lag and delete retention (PATCH /v1/topics/{topic}, only the settings
// changed), showing the answer, or its error.
function settingsForm(t, shown) {
  let cur = t;
  const ms = (id, label, v) => el("input", { id, type: "number", step: "1", value: String(v), "aria-label": label });
  const policy = policySelect("set-policy", t.cleanup_policy);
  const retention = ms("set-retention", "retention in ms", t.retention_ms);
  const lag = ms("set-lag", "min compaction lag in ms", t.min_compaction_lag_ms);
  const del = ms("set-delete-retention", "delete retention in ms", t.delete_retention_ms);
  const out = el("span", { id: "settings-result", role: "status" });
  const form = el("form", { class: "settings" },
    el("label", {}, "Cleanup policy ", policy), el("label", {}, "Retention (ms, -1: unlimited) ", retention),
    el("label", {}, "Min compaction lag (ms) ", lag), el("label", {}, "Delete retention (ms) ", del),
    el("button", { type: "submit" }, "Save"), out);
  form.addEventListener("submit", async e => {
    e.preventDefault();
    const configs = {};
    if (policy.value !== cur.cleanup_policy) configs["cleanup.policy"] = policy.value;
    for (const [input, key, field] of [[retention, "retention.ms", "retention_ms"], [lag, "min.compaction.lag.ms", "min_compaction_lag_ms"],
      [del, "delete.retention.ms", "delete_retention_ms"]]) {
      if (input.value.trim() !== String(cur[field])) configs[key] = input.value.trim();
    }
    if (!Object.keys(configs).length) { out.textContent = "nothing changed"; return; }
    out.textContent = "";
    try {
      cur = await api("/v1/topics/" + encodeURIComponent(t.name), { method: "PATCH", headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ configs }) });
      shown.textContent = settingsText(cur);
      out.className = "";
      out.textContent = "saved";
    } catch (err) { out.className = "error"; out.textContent = "failed: " + err.message; }
  });
  return el("section", {}, el("h2", {}, "Settings"), form);
}

async function topicPage(name) {
  const t = await api("/v1/topics/" + encodeURIComponent(name));
  const partitionRows = t => t.partition_info.map(p => [p.partition, p.log_start, p.high_watermark, bytes(p.size_bytes),
    p.leader || "?", p.replicas.join(" "), p.isr.join(" ")]);
  const headers = ["Partition", "Log start", "High watermark", "Size", "Leader", "Replicas", "In sync"];
  let parts = table(headers, partitionRows(t), "partitions");
  const partsNote = el("p", { id: "partitions-note", class: "error" });
  refresh = setInterval(async () => {
    try {
      const fresh = table(headers, partitionRows(await api("/v1/topics/" + encodeURIComponent(name))), "partitions");
      parts.replaceWith(fresh);
      parts = fresh;
      partsNote.textContent = "";
    } catch (err) { partsNote.textContent = "partitions not refreshed: " + err.message; }
  }, 5000);
  const log = el("ol", { id: "tail", class: "tail", "aria-label": "live tail" });
  const filter = el("input", { id: "key-filter", type: "search", placeholder: "only keys containing…", "aria-label": "key filter" });
  const pretty = el("input", { id: "pretty-json", type: "checkbox" });
  const pause = el("button", { type: "button", id: "pause" }, "Pause");
  let paused = false, held = [];
  // The filter hides what does not match and drops nothing: every record
  // stays in the list (the newest 500), so clearing the filter shows
  // what arrived meanwhile.
  const matches = li => !filter.value || li.dataset.key.includes(filter.value);
  filter.addEventListener("input", () => { for (const li of log.children) li.hidden = !matches(li); });
  pretty.addEventListener("change", () => { for (const li of log.children) li.querySelector(".value").replaceWith(valueView(li.rec, pretty.checked)); });
  // Newest first, in time order: the history replayed from several
  // partitions arrives a partition at a time, so each record is put
  // where its timestamp goes (above those of the same time: it came
  // later in its partition).
  const add = rec => {
    const li = el("li", {}, el("span", { class: "pos" }, rec.partition + ":" + rec.offset), " ",
      el("span", { class: "key" }, rec.key === null ? "∅" : rec.key), " ", valueView(rec, pretty.checked),
      " ", el("time", {}, rec.timestamp));
    li.rec = rec;
    li.dataset.key = rec.key || "";
    li.dataset.ts = rec.timestamp;
    li.hidden = !matches(li);
    let at = log.firstChild;
    while (at && at.dataset.ts > rec.timestamp) at = at.nextSibling;
    log.insertBefore(li, at);
    while (log.children.length > 500) log.lastChild.remove();
  };
  pause.addEventListener("click", () => {
    paused = !paused;
    pause.textContent = paused ? "Resume" : "Pause";
    if (!paused) { held.forEach(add); held = []; }
  });
  tail = liveTail(name, rec => {
    if (paused) { if (held.length < 1000) held.push(rec); } else add(rec);
  });
  const settings = el("p", { id: "settings" }, settingsText(t));
  show("Topic " + t.name,
    settings,
    parts, partsNote,
    settingsForm(t, settings),
    produceForm(t.name),
    el("h2", {}, "Live tail (last hour, then live)"),
    el("div", { class: "controls" }, filter, el("label", {}, pretty, " Pretty JSON"), pause), log,
    recordBrowser(t));
}

// liveTail follows a topic's live tail (GET .../events?from=-1h) and hands
// each record to onRecord once, in each partition's order. When the stream
// breaks (its node stops, dies, or ends it with a 5xx error event) it
// resumes on the next node of the cluster with the id of the last record
// handed on (last_event_id), so losing any node, the page's own included,
// loses and repeats nothing. The nodes are the cluster page's
// (/v1/cluster, refreshed while the page is open); another node is read
// cross-origin, which the nodes allow for their own consoles only
// (docs/http.md, "Console"). An error event of another status (416: the
// records were removed; 403, 404) ends the tail with its message.
function liveTail(topic, onRecord) {
  const path = "/v1/topics/" + encodeURIComponent(topic) + "/events?from=-1h";
  let bases = [""]; // "": this page's node; then the others' origins
  let at = 0, es = null, lastId = "", wait = 250, timer = null, ended = false;
  const learnNodes = async () => {
    try {
      const c = await api("/v1/cluster");
      const others = c.nodes.filter(n => n.id !== c.self.id).map(n => nodeOrigin(n.http_addr)).filter(o => o);
      const current = bases[at];
      bases = ["", ...others];
      at = Math.max(0, bases.indexOf(current));
    } catch (err) { /* keep the nodes known */ }
  };
  const next = () => {
    es.close();
    if (ended || timer) return;
    at = (at + 1) % bases.length;
    say("live tail: reconnecting…");
    timer = setTimeout(open, wait);
    wait = Math.min(2 * wait, 5000);
  };
  const open = () => {
    timer = null;
    const base = bases[at];
    es = new EventSource(base + path + (lastId ? "&last_event_id=" + encodeURIComponent(lastId) : ""),
      base ? { withCredentials: true } : {});
    es.addEventListener("record", e => { lastId = e.lastEventId; onRecord(JSON.parse(e.data)); });
    es.addEventListener("open", () => {
      wait = 250;
      say("live tail connected" + (base ? " via " + base.replace(/^[a-z]+:\/\//, "") : ""));
    });
    es.addEventListener("error", e => {
      const body = e.data ? JSON.parse(e.data) : {};
      if (body.status && body.status < 500) {
        ended = true;
        es.close();
        say("live tail ended: " + body.error);
        return;
      }
      next();
    });
  };
  learnNodes();
  const nodes = setInterval(learnNodes, 30000);
  // For tests: the other nodes' origins the tail would move to.
  window.logdTail = { origins: () => bases.slice(1) };
  open();
  return { close() { ended = true; es.close(); clearTimeout(timer); clearInterval(nodes); } };
}

// nodeOrigin is the origin of a node's advertised HTTP address, in this
// page's scheme, or null for an address a browser cannot reach it by
// (0.0.0.0, an IPv6 literal: the nodes' CSP and CORS leave those out too).
function nodeOrigin(addr) {
  const m = /^([A-Za-z0-9.-]+):(\d+)$/.exec(addr || "");
  return m && m[1] !== "0.0.0.0" ? location.protocol + "//" + m[1] + ":" + m[2] : null;
}

// valueView is a record's value: as sent, or, pretty and when it is a
// JSON object or array, indented.
function valueView(rec, pretty) {
  const v = rec.value ?? "null";
  if (pretty && rec.value_encoding !== "base64" && /^\s*[[{]/.test(v)) {
    try { return el("pre", { class: "value json" }, JSON.stringify(JSON.parse(v), null, 2)); } catch (e) { /* not JSON: as sent */ }
  }
  return el("span", { class: "value" }, v);
}

// recordBrowser reads a partition's records from an offset or a time
// (GET records with offset= or time=), 50 at a time.
function recordBrowser(t) {
  const part = el("select", { id: "browse-partition", "aria-label": "partition" },
    t.partition_info.map(p => el("option", { value: p.partition }, "partition " + p.partition)));
  const from = el("input", { id: "browse-from", placeholder: "offset, or a time: 2026-12-01T13:02:11Z", "aria-label": "from offset or time" });
  const out = el("div", { id: "browse" });
  const more = el("button", { type: "button", id: "browse-next", hidden: "" }, "Next");
  let next = 0;
  const read = async q => {
    try {
      const r = await api("/v1/topics/" + encodeURIComponent(t.name) + "/records?max=50&partition=" + part.value + q);
      out.replaceChildren(
        r.records.length ? table(["Offset", "Key", "Value", "Timestamp"], r.records.map(rec =>
          [rec.offset, rec.key === null ? "∅" : rec.key, valueView(rec, true), rec.timestamp]), "browse-records")
          : el("p", { id: "browse-records" }, "No records there yet."),
        el("p", {}, "Log start ", r.log_start, ", high watermark ", r.high_watermark, "."));
      next = r.next_offset;
      more.hidden = r.records.length === 0;
    } catch (err) { out.replaceChildren(el("p", { class: "error" }, err.message)); }
  };
  const form = el("form", { class: "browse" }, el("label", {}, "Partition ", part), el("label", {}, "From ", from),
    el("button", { type: "submit" }, "Read"), more);
  form.addEventListener("submit", e => {
    e.preventDefault();
    const v = from.value.trim();
    const when = new Date(v);
    read(v === "" ? "" : /^\d+$/.test(v) ? "&offset=" + v
      : "&time=" + encodeURIComponent(isNaN(when) ? v : when.toISOString()));
  });
  more.addEventListener("click", () => read("&offset=" + next));
  return el("section", {}, el("h2", {}, "Browse records"), form, out);
}

function produceForm(topic) {
  const key = el("input", { id: "produce-key", name: "key", placeholder: "key (optional)" });
  const value = el("input", { id: "produce-value", name: "value", placeholder: "value", required: "" });
  const out = el("span", { id: "produce-result", role: "status" });
  const form = el("form", { class: "produce" }, el("label", {}, "Key ", key), el("label", {}, "Value ", value),
    el("button", { type: "submit" }, "Produce"), out);
  form.addEventListener("submit", async e => {
    e.preventDefault();
    const rec = { value: value.value };
    if (key.value) rec.key = key.value;
    try {
      const r = await api("/v1/topics/" + encodeURIComponent(topic) + "/records", {
        method: "POST", headers: { "Content-Type": "application/json", "Idempotency-Key": crypto.randomUUID ? crypto.randomUUID() : String(Math.random()) },
        body: JSON.stringify({ records: [rec] }) });
      const p = r.records[0];
      out.textContent = p.error ? "failed: " + p.error : "written at " + p.partition + ":" + p.offset;
      value.value = "";
    } catch (err) { out.textContent = "failed: " + err.message; }
  });
  return el("section", {}, el("h2", {}, "Produce"), form);
}

async function groupsPage() {
  const { groups } = await api("/v1/groups");
  show("Consumer groups", groups.length ? table(["Group", "State", "Protocol type"], groups.map(g =>
    [el("a", { href: "#/groups/" + encodeURIComponent(g.group) }, g.group), g.state, g.protocol_type]), "groups")
    : el("p", { id: "groups" }, "No groups."));
}

async function groupPage(name) {
  const g = await api("/v1/groups/" + encodeURIComponent(name));
  const lags = lagHistory[name] = lagHistory[name] || [];
  const note = lag => { lags.push(lag); if (lags.length > maxSamples) lags.shift(); };
  note(g.lag);
  let chart = spark(lags, "lag of " + name, "lag-chart");
  refresh = setInterval(async () => {
    try {
      note((await api("/v1/groups/" + encodeURIComponent(name))).lag);
      const fresh = spark(lags, "lag of " + name, "lag-chart");
      chart.replaceWith(fresh);
      chart = fresh;
    } catch (err) { say(err.message); }
  }, sampleMs);
  show("Group " + g.group,
    el("p", {}, g.state, ", generation ", g.generation, ", total lag ", g.lag),
    el("p", {}, "Lag over time: ", chart),
    el("h2", {}, "Members"), table(["Member", "Client", "Host", "Assignment"], g.members.map(m =>
      [m.member_id, m.client_id, m.client_host, m.assignment.map(a => a.topic + ":" + a.partition).join(" ")])),
    el("h2", {}, "Committed offsets and lag"), table(["Topic", "Partition", "Committed", "High watermark", "Lag"],
      g.offsets.map(o => [o.topic, o.partition, o.committed, o.high_watermark, o.lag]), "lag"));
}

async function clusterPage() {
  const c = await api("/v1/cluster");
  const { topics } = await api("/v1/topics");
  const leads = {};
  for (const t of topics) for (const p of t.partition_info) leads[p.leader] = (leads[p.leader] || 0) + 1;
  show("Cluster", el("p", {}, "This node: ", c.self.id),
    table(["Node", "Status", "HTTP", "API", "Kafka", "Partitions led"], c.nodes.map(n =>
      [n.id, n.alive ? "up" : "not answering", n.http_addr || "", n.api_addr || "", n.kafka_addr || "",
        leads[n.id] || 0]), "nodes"));
}

async function route() {
  if (tail) { tail.close(); tail = null; }
  if (refresh) { clearInterval(refresh); refresh = null; }
  say("");
  const parts = location.hash.replace(/^#\/?/, "").split("/").map(decodeURIComponent);
  for (const a of document.querySelectorAll("nav a")) a.removeAttribute("aria-current");
  const nav = document.getElementById("nav-" + (parts[0] || "topics"));
  if (nav) nav.setAttribute("aria-current", "page");
  try {
    switch (parts[0] || "topics") {
      case "topics": await (parts[1] ? topicPage(parts[1]) : topicsPage()); break;
      case "groups": await (parts[1] ? groupPage(parts[1]) : groupsPage()); break;
      case "cluster": await clusterPage(); break;
      default: show("Not found", el("p", {}, "No such page."));
    }
  } catch (err) {
    show("Error", el("p", { class: "error" }, err.message));
  }
  main.focus();
}

window.addEventListener("hashchange", route);
// For tests: take a sample now.
window.logdCharts = { sample, rates, samples };
sample();
setInterval(sample, sampleMs);
route();
