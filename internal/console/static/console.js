// Kura console: follows running jobs over server-sent events and draws the
// job monitor's chart as inline SVG. Plain JavaScript, no libraries.
"use strict";

function fmtSize(n) {
  const u = ["B", "KiB", "MiB", "GiB", "TiB"];
  let i = 0;
  while (n >= 1024 && i < u.length - 1) { n /= 1024; i++; }
  return (i === 0 ? n.toFixed(0) : n.toFixed(2)) + " " + u[i];
}

function kbps(bytesPerSecond) { return Math.round(bytesPerSecond / 1024).toLocaleString("en"); }

// follow opens the event stream of a job and calls on(event) for each; the
// stream is closed after job_ended.
function follow(id, on) {
  const es = new EventSource("/jobs/" + id + "/events");
  es.onmessage = (m) => {
    const ev = JSON.parse(m.data);
    on(ev);
    if (ev.kind === "job_ended") es.close();
  };
  return es;
}

const SVG = "http://www.w3.org/2000/svg";

function svgEl(name, attrs) {
  const e = document.createElementNS(SVG, name);
  for (const k in attrs) e.setAttribute(k, attrs[k]);
  return e;
}

// Chart draws KB/s over time with the Average and Peak lines: a value
// axis in KB/s, a time axis in seconds since the job started, and a
// legend of the three lines.
class Chart {
  constructor(svg, started) {
    this.svg = svg;
    this.started = started;
    this.points = []; // [seconds since start, bytes/s]
    this.peak = 0;
    this.avg = 0;
  }
  add(t, rate, avg) {
    if (this.t0 === undefined) this.t0 = isNaN(this.started) ? t : Math.min(this.started, t);
    this.points.push([(t - this.t0) / 1000, rate]);
    this.peak = Math.max(this.peak, rate);
    this.avg = avg;
    this.draw();
  }
  draw() {
    const W = 800, H = 260, L = 70, R = 10, T = 30, B = 40;
    const svg = this.svg;
    while (svg.firstChild) svg.removeChild(svg.firstChild);
    const xmax = Math.max(10, this.points.length ? this.points[this.points.length - 1][0] : 0);
    const ymax = Math.max(1, this.peak * 1.1);
    const x = (s) => L + (W - L - R) * s / xmax;
    const y = (r) => H - B - (H - T - B) * r / ymax;
    svg.appendChild(svgEl("line", {x1: L, y1: H - B, x2: W - R, y2: H - B, class: "axis"}));
    svg.appendChild(svgEl("line", {x1: L, y1: T, x2: L, y2: H - B, class: "axis"}));
    for (let k = 0; k <= 4; k++) {
      const v = ymax * k / 4;
      const lab = svgEl("text", {x: L - 4, y: y(v) + 4, class: "tick", "text-anchor": "end"});
      lab.textContent = kbps(v);
      svg.appendChild(lab);
    }
    for (let k = 0; k <= 4; k++) {
      const s = xmax * k / 4;
      const lab = svgEl("text", {x: x(s), y: H - B + 14, class: "tick", "text-anchor": k === 0 ? "start" : k === 4 ? "end" : "middle"});
      lab.textContent = (xmax < 40 ? s.toFixed(1).replace(/\.0$/, "") : Math.round(s)) + " s";
      svg.appendChild(lab);
    }
    const yt = svgEl("text", {x: 14, y: (T + H - B) / 2, class: "axis-title", "text-anchor": "middle",
      transform: "rotate(-90 14 " + (T + H - B) / 2 + ")"});
    yt.textContent = "KB/s";
    svg.appendChild(yt);
    const xt = svgEl("text", {x: (L + W - R) / 2, y: H - 4, class: "axis-title", "text-anchor": "middle"});
    xt.textContent = "seconds since the job started";
    svg.appendChild(xt);
    // The legend, in the chart itself (the figcaption says it in words too).
    [["rate", "KB/s (each progress event)"], ["avg", "Average"], ["peak", "Peak"]].forEach(([cls, name], i) => {
      const lx = L + 10 + i * 230;
      svg.appendChild(svgEl("line", {x1: lx, y1: 12, x2: lx + 24, y2: 12, class: cls + " legend"}));
      const t = svgEl("text", {x: lx + 30, y: 16, class: "tick legend"});
      t.textContent = name;
      svg.appendChild(t);
    });
    if (this.points.length) {
      const pts = this.points.map(([s, r]) => x(s).toFixed(1) + "," + y(r).toFixed(1)).join(" ");
      svg.appendChild(svgEl("polyline", {points: pts, class: "rate"}));
      svg.appendChild(svgEl("line", {x1: L, y1: y(this.avg), x2: W - R, y2: y(this.avg), class: "avg"}));
      svg.appendChild(svgEl("line", {x1: L, y1: y(this.peak), x2: W - R, y2: y(this.peak), class: "peak"}));
    }
    svg.setAttribute("data-points", String(this.points.length));
  }
}

// showPhases fills the phases table from a job's figures (phase_ended,
// job_ended events).
function showPhases(phases) {
  const body = document.querySelector("#phases tbody");
  if (!body || phases.length === 0) return;
  while (body.firstChild) body.removeChild(body.firstChild);
  for (const p of phases) {
    const tr = document.createElement("tr");
    const cells = [p.name, (p.elapsed_seconds || 0).toFixed(1) + "s", String(p.files || 0), fmtSize(p.source_bytes || 0),
      fmtSize(p.media_bytes || 0), p.compression_ratio || "–", Math.round(p.avg_kbps || 0).toLocaleString("en"),
      Math.round(p.peak_kbps || 0).toLocaleString("en")];
    cells.forEach((text, i) => {
      const td = document.createElement("td");
      td.textContent = text;
      if (i >= 2) td.className = "num";
      tr.appendChild(td);
    });
    body.appendChild(tr);
  }
}

function jobMonitor(root) {
  const id = root.dataset.job;
  const started = Date.parse(root.dataset.started);
  const chart = new Chart(document.getElementById("chart"), started);
  chart.draw();
  const ended = ["succeeded", "warnings", "failed", "canceled", "interrupted"];
  if (ended.includes(root.dataset.state)) return;
  const set = (elid, text) => { const e = document.getElementById(elid); if (e) e.textContent = text; };
  // A job that was queued when the page was drawn (the page a form
  // submission lands on) starts: its state, not why it waited.
  const running = () => {
    if (root.dataset.state === "running") return;
    root.dataset.state = "running";
    set("state", "running");
    const st = document.getElementById("state");
    if (st) st.className = "state-running";
    const why = document.getElementById("reason");
    if (why) why.remove();
  };
  follow(id, (ev) => {
    const t = Date.parse(ev.time);
    switch (ev.kind) {
    case "progress": {
      const t0 = isNaN(started) ? (chart.t0 === undefined ? t : chart.t0) : started;
      const secs = Math.max((t - t0) / 1000, 0.001);
      const avg = (ev.bytes || 0) / secs;
      chart.add(t, ev.rate || 0, avg);
      set("files", String(ev.files || 0));
      set("bytes", fmtSize(ev.bytes || 0));
      set("avg", kbps(avg));
      set("peak", kbps(chart.peak));
      running();
      break;
    }
    case "queued":
      if (ev.message) set("chart-note", "Waiting: " + ev.message);
      break;
    case "phase_started":
      running();
      set("chart-note", "Phase " + ev.phase + " started.");
      break;
    case "phase_ended":
      if (ev.figures) showPhases(ev.figures.phases || []);
      break;
    case "warning": {
      const w = document.getElementById("warnings");
      if (w) w.textContent = String(Number(w.textContent) + 1);
      break;
    }
    case "job_ended": {
      const f = ev.figures;
      if (f) {
        set("files", String(f.files || 0));
        set("bytes", fmtSize(f.source_bytes || 0));
        set("avg", Math.round(f.avg_kbps || 0).toLocaleString("en"));
        set("peak", Math.round(f.peak_kbps || 0).toLocaleString("en"));
        set("warnings", String(f.warnings || 0));
        showPhases(f.phases || []);
      }
      root.dataset.state = ev.message;
      set("state", ev.message);
      const st = document.getElementById("state");
      if (st) st.className = "state-" + ev.message;
      const form = document.getElementById("cancel-form");
      if (form) form.remove();
      set("chart-note", "The job has ended (" + ev.message + "); reload the page for its log.");
      break;
    }
    }
  });
}

function dashboard() {
  for (const row of document.querySelectorAll("tr.live-job")) {
    const cell = (f) => row.querySelector('[data-field="' + f + '"]');
    follow(row.dataset.job, (ev) => {
      if (ev.kind === "progress") {
        cell("files").textContent = String(ev.files || 0);
        cell("bytes").textContent = fmtSize(ev.bytes || 0);
        cell("rate").textContent = kbps(ev.rate || 0);
      } else if (ev.kind === "job_ended") {
        row.classList.add("ended");
        cell("rate").textContent = ev.message;
      }
    });
  }
}

document.addEventListener("DOMContentLoaded", () => {
  const mon = document.getElementById("monitor");
  if (mon) jobMonitor(mon);
  if (document.body.dataset.page === "dashboard") dashboard();
});
