/**
 * The `/status` page: one self-contained document (inline CSS and script, no external resource:
 * the machines it runs on may have no internet) that polls `/status.json` every second and redraws.
 * Every value from the snapshot reaches the page through `textContent` or `setAttribute`, never as
 * markup: sequence names in refused requests and worker ids are user data.
 * The script is plain ES2017 in a string (no template literals inside, so this file needs no escaping).
 */
export const STATUS_PAGE = `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>idd status</title>
<style>
  :root { --fg: #1d232a; --muted: #66707a; --line: #d9dee3; --ok: #1f8a4c; --bad: #c0392b; --warn: #b7791f; --bg: #f6f8fa; }
  * { box-sizing: border-box; }
  body { margin: 0; font: 14px/1.4 system-ui, -apple-system, "Segoe UI", Roboto, sans-serif; color: var(--fg); background: var(--bg); }
  header { display: flex; align-items: baseline; gap: 16px; padding: 12px 20px; background: #fff; border-bottom: 1px solid var(--line); }
  header h1 { font-size: 18px; margin: 0; }
  #live { font-size: 13px; color: var(--muted); }
  #live.ok::before, #live.stale::before { content: ""; display: inline-block; width: 9px; height: 9px; border-radius: 50%; margin-right: 6px; }
  #live.ok::before { background: var(--ok); }
  #live.stale::before { background: var(--bad); }
  main { display: grid; grid-template-columns: 1fr 1fr; gap: 14px; padding: 14px 20px; }
  section { background: #fff; border: 1px solid var(--line); border-radius: 6px; padding: 10px 14px; min-width: 0; }
  section.wide { grid-column: 1 / -1; }
  h2 { font-size: 14px; margin: 0 0 6px; }
  .scope { font-weight: normal; color: var(--muted); font-size: 12px; margin-left: 6px; }
  table { border-collapse: collapse; width: 100%; }
  th, td { text-align: left; padding: 3px 8px 3px 0; border-bottom: 1px solid var(--line); white-space: nowrap; }
  th { font-size: 12px; color: var(--muted); font-weight: 600; }
  td.num, th.num { text-align: right; font-variant-numeric: tabular-nums; }
  td.name { max-width: 320px; overflow: hidden; text-overflow: ellipsis; font-family: ui-monospace, Menlo, monospace; }
  tr.mine td { background: #eef6ff; }
  .pill { display: inline-block; padding: 0 7px; border-radius: 9px; font-size: 12px; color: #fff; }
  .pill.ok { background: var(--ok); } .pill.bad { background: var(--bad); } .pill.warn { background: var(--warn); }
  .low { color: var(--bad); font-weight: 600; }
  .muted { color: var(--muted); }
  .empty { color: var(--muted); font-style: italic; padding: 4px 0; }
  .lane { display: grid; grid-template-columns: 160px 1fr; align-items: center; height: 22px; }
  .lane .label { font-family: ui-monospace, Menlo, monospace; font-size: 12px; overflow: hidden; text-overflow: ellipsis; white-space: nowrap; }
  .lane .track { position: relative; height: 14px; background: var(--bg); border-radius: 3px; }
  .mark { position: absolute; top: 1px; width: 4px; height: 12px; border-radius: 2px; background: #3b7dd8; }
  .axis { display: grid; grid-template-columns: 160px 1fr; font-size: 11px; color: var(--muted); }
  .axis div:last-child { display: flex; justify-content: space-between; }
  footer { padding: 0 20px 16px; font-size: 12px; color: var(--muted); }
</style>
</head>
<body>
<header>
  <h1>idd status</h1>
  <span id="who"></span>
  <span id="ready"></span>
  <span id="live" class="stale">connecting…</span>
</header>
<main>
  <section class="wide" id="sequences-section">
    <h2>Sequences <span class="scope" id="sequences-scope">served by this worker</span></h2>
    <table id="sequences">
      <thead><tr><th>sequence</th><th>period</th><th class="num">home partition</th><th>owner</th><th class="num">rate</th><th class="num">headroom</th><th class="num">headroom numbers</th><th class="num">block size</th><th class="num">in memory</th><th class="num">requests</th><th>left</th><th>runs out</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="pool-section">
    <h2>Pool <span class="scope" id="pool-scope"></span></h2>
    <table id="pool">
      <thead><tr><th class="num">partition</th><th>owner</th><th class="num">lag</th><th class="num">committed</th><th class="num">end</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section id="health-section">
    <h2>Breakers and dependencies <span class="scope">this worker</span></h2>
    <table id="breakers">
      <thead><tr><th>dependency</th><th>breaker</th><th>probe</th><th>since</th></tr></thead>
      <tbody></tbody>
    </table>
    <h2 style="margin-top:12px">Recent errors <span class="scope">this worker, by code</span></h2>
    <div id="error-totals"></div>
    <table id="errors">
      <thead><tr><th>when</th><th>code</th><th>sequence (as requested)</th><th class="num">requests</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section class="wide" id="gapless-section">
    <h2>Gapless sequences <span class="scope">numbers in MongoDB by state, whole pool, as this worker last counted (the one that owns request partition 0)</span></h2>
    <table id="gapless">
      <thead><tr><th>sequence</th><th class="num">pending</th><th class="num">confirmed</th><th class="num">voided</th><th class="num">expired (voided here)</th><th>counted</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
  <section class="wide" id="grants-section">
    <h2>Recent grants <span class="scope">blocks this worker claimed from Redis, last 2 minutes</span></h2>
    <div id="timeline"></div>
    <table id="grants">
      <thead><tr><th>when</th><th>sequence</th><th>period</th><th class="num">first</th><th class="num">last</th><th class="num">size</th></tr></thead>
      <tbody></tbody>
    </table>
  </section>
</main>
<footer id="scope-note"></footer>
<script>
"use strict";
(function () {
  var WINDOW_MS = 120000;
  var lastOk = 0;
  var updates = 0;
  function el(tag, text, cls) {
    var e = document.createElement(tag);
    if (text !== undefined && text !== null) e.textContent = String(text);
    if (cls) e.className = cls;
    return e;
  }
  function row(cells, cls) {
    var tr = el("tr", null, cls);
    cells.forEach(function (c) {
      var td = el("td", c[0], c[1]);
      if (c[2]) td.title = c[2];
      tr.appendChild(td);
    });
    return tr;
  }
  function fill(id, rows, emptyText, columns) {
    var body = document.querySelector("#" + id + " tbody");
    body.textContent = "";
    if (rows.length === 0) {
      var tr = el("tr");
      var td = el("td", emptyText, "empty");
      td.colSpan = columns;
      tr.appendChild(td);
      body.appendChild(tr);
    }
    rows.forEach(function (r) { body.appendChild(r); });
  }
  function int(n) { return n === null || n === undefined ? "—" : Number(n).toLocaleString("en-US"); }
  function big(s) { return s === null || s === undefined ? "—" : String(s).replace(/\\B(?=(\\d{3})+(?!\\d))/g, ","); }
  function ago(at, now) {
    var s = Math.max(0, (now - at) / 1000);
    return s < 60 ? s.toFixed(1) + " s ago" : (s / 60).toFixed(1) + " min ago";
  }
  function rate(r) { return r >= 100 ? Math.round(r).toLocaleString("en-US") + " /s" : r.toFixed(1) + " /s"; }
  function minutes(m, hasCounter) {
    if (!hasCounter) return ["—", "num"];
    if (m === null) return ["idle", "num muted"];
    return [(m >= 100 ? Math.round(m).toLocaleString("en-US") : m.toFixed(1)) + " min", m < 5 ? "num low" : "num"];
  }

  // Capacity forecasts as the worker put them in words (src/ops/forecast-text.ts); red under a day.
  function texts(q, which) {
    var f = q.forecasts || [];
    return f.length === 0 ? "—" : f.map(function (x) { return x.text[which]; }).join("; ");
  }
  function runsOut(q) {
    var soon = (q.forecasts || []).some(function (x) { return x.exhaustionSeconds !== null && x.exhaustionSeconds < 86400; });
    return [texts(q, "runsOut"), soon ? "low" : ""];
  }

  function render(s) {
    var now = s.at;
    var routing = s.worker.routing || { partitions: "?", forwarded: 0 };
    document.getElementById("who").textContent = "worker " + s.worker.id + " · partitions " + (s.worker.partitions.join(", ") || "none") +
      " of " + routing.partitions + " · " + routing.forwarded + " requests forwarded home";
    var ready = document.getElementById("ready");
    ready.textContent = "";
    if (s.worker.ready) ready.appendChild(el("span", s.worker.ready.ready ? "ready" : "not ready", "pill " + (s.worker.ready.ready ? "ok" : "bad")));

    fill("sequences", s.sequences.map(function (q) {
      var h = minutes(q.headroomMinutes, q.headroomNumbers !== null);
      return row([
        [q.sequence, "name", q.sequence], [q.period === null ? "—" : q.period], [q.partition === null ? "—" : q.partition, "num"],
        [q.owner === null ? "unowned" : q.owner], [rate(q.ratePerSecond), "num"], h, [big(q.headroomNumbers), "num"],
        [int(q.blockSize), "num"], [big(q.inMemory), "num"], [int(q.requests), "num"],
        [texts(q, "left")], runsOut(q)
      ]);
    }), "no sequence served by this worker yet", 12);
    Array.prototype.forEach.call(document.querySelectorAll("#sequences tbody tr"), function (tr, i) {
      if (s.sequences[i]) tr.setAttribute("data-sequence", s.sequences[i].sequence);
    });

    var poolScope = document.getElementById("pool-scope");
    if (s.pool.error) {
      poolScope.textContent = "the broker could not be asked: " + s.pool.error;
      fill("pool", [], "unknown", 5);
    } else {
      poolScope.textContent = "whole group " + s.pool.group + " (" + s.pool.state + ", " + s.pool.members + (s.pool.members === 1 ? " member) on " : " members) on ") + s.pool.topic + ", from the broker";
      fill("pool", s.pool.partitions.map(function (p) {
        return row([[p.partition, "num"], [p.owner === null ? "unowned" : p.owner, null, p.host || ""], [int(p.lag), "num"],
          [p.committed === null ? "—" : big(p.committed), "num"], [big(p.end), "num"]],
          p.owner === s.worker.id ? "mine" : "");
      }), "no partitions", 5);
    }

    var deps = {};
    (s.worker.ready ? s.worker.ready.dependencies : []).forEach(function (d) { deps[d.name] = d; });
    fill("breakers", s.breakers.map(function (b) {
      var d = deps[b.dependency];
      var tr = row([[b.dependency], [""], [""], [b.since === null ? "since start" : ago(b.since, now)]]);
      tr.children[1].appendChild(el("span", b.open ? "open (failing fast)" : "closed", "pill " + (b.open ? "bad" : "ok")));
      tr.children[2].appendChild(d ? el("span", d.up ? "answers" : "down " + (d.downForMs / 1000).toFixed(0) + " s", "pill " + (d.up ? "ok" : "warn")) : el("span", "—", "muted"));
      return tr;
    }), "no breakers", 4);

    var totals = document.getElementById("error-totals");
    totals.textContent = "";
    s.errors.totals.forEach(function (t) { totals.appendChild(el("span", t.code + " × " + int(t.requests), "pill bad")); totals.appendChild(document.createTextNode(" ")); });
    fill("errors", s.errors.recent.slice().reverse().slice(0, 8).map(function (e) {
      return row([[ago(e.at, now)], [e.code], [e.sequence, "name", e.sequence], [int(e.requests), "num"]]);
    }), "no errors since the worker started", 4);

    fill("gapless", (s.gapless || []).map(function (g) {
      return row([[g.sequence, "name", g.sequence], [int(g.pending), "num"], [int(g.confirmed), "num"], [int(g.voided), "num"], [int(g.expiredHere), "num"], [ago(g.countedAt, now)]]);
    }), s.gaplessCounted === false ? "counted by the worker that owns request partition 0" : "no gapless sequence", 6);

    var timeline = document.getElementById("timeline");
    timeline.textContent = "";
    var recent = s.grants.filter(function (g) { return now - g.at <= WINDOW_MS; });
    var lanes = [];
    recent.forEach(function (g) { if (lanes.indexOf(g.sequence) < 0) lanes.push(g.sequence); });
    lanes.sort();
    lanes.forEach(function (name) {
      var lane = el("div", null, "lane");
      lane.appendChild(el("div", name, "label"));
      var track = el("div", null, "track");
      recent.forEach(function (g) {
        if (g.sequence !== name) return;
        var m = el("div", null, "mark");
        m.style.left = (100 * (1 - (now - g.at) / WINDOW_MS)).toFixed(2) + "%";
        m.title = g.sequence + " " + big(g.first) + "–" + big(g.last) + " (" + int(g.size) + ")";
        track.appendChild(m);
      });
      lane.appendChild(track);
      timeline.appendChild(lane);
    });
    if (lanes.length > 0) {
      var axis = el("div", null, "axis");
      axis.appendChild(el("div"));
      var ticks = el("div");
      ["−2 min", "−1 min", "now"].forEach(function (t) { ticks.appendChild(el("span", t)); });
      axis.appendChild(ticks);
      timeline.appendChild(axis);
    }
    fill("grants", s.grants.slice().reverse().slice(0, 6).map(function (g) {
      return row([[ago(g.at, now)], [g.sequence, "name"], [g.period === null ? "—" : g.period], [big(g.first), "num"], [big(g.last), "num"], [int(g.size), "num"]]);
    }), "no blocks claimed yet", 6);

    document.getElementById("scope-note").textContent =
      "Scope: sequences, grants, breakers and errors are what worker " + s.worker.id +
      " knows (each worker serves the sequences of its own partitions: open the others' /status for theirs). " +
      "The pool table is the whole consumer group, as the broker reports it. Rates are numbers issued over the last 10 s; " +
      "headroom is numbers reserved in MongoDB above what this worker claimed, in minutes at that rate. " +
      "Left and runs out: what the sequence has before it runs out (its max value, {seq:N} width, obfuscated domain, snowflake time field or worker ids) and when, at the rate of its last sample windows.";
  }

  // With IDD_HTTP_TOKEN set the page is opened as /status#token=<token>: the fragment never leaves the
  // browser (not sent, not logged), and the token goes with each poll.
  var token = new URLSearchParams(location.hash.slice(1)).get("token");
  var headers = token ? { authorization: "Bearer " + token } : {};

  function tick() {
    fetch("status.json", { cache: "no-store", headers: headers })
      .then(function (r) {
        if (r.status === 401) throw new Error("HTTP 401: this worker wants its token: open /status#token=<IDD_HTTP_TOKEN>");
        if (!r.ok) throw new Error("HTTP " + r.status);
        return r.json();
      })
      .then(function (s) {
        render(s);
        lastOk = Date.now();
        document.body.setAttribute("data-updates", String(++updates)); // for tests: how often it redrew
        var live = document.getElementById("live");
        live.className = "ok";
        live.textContent = "live · updated " + new Date(s.at).toLocaleTimeString("en-GB");
      })
      .catch(function (e) {
        var live = document.getElementById("live");
        live.className = "stale";
        live.textContent = "not updating: " + e.message + (lastOk ? " (last update " + ago(lastOk, Date.now()) + ")" : "");
      })
      .then(function () { setTimeout(tick, 1000); });
  }
  tick();
})();
</script>
</body>
</html>
`;
