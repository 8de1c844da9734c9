// Hermes web view: a session filter and the live tail. Builds DOM with textContent only:
// model and log text never becomes markup.
"use strict";

function filterRows(input) {
  const table = document.querySelector(input.dataset.filter);
  if (!table) return;
  const q = input.value.trim().toLowerCase();
  let shown = 0;
  for (const row of table.tBodies[0].rows) {
    const hit = !q || (row.dataset.search || "").includes(q);
    row.hidden = !hit;
    if (hit) shown += 1;
  }
  const count = document.getElementById("count");
  if (count) count.textContent = shown + (shown === 1 ? " session" : " sessions");
}

function cell(row, text, cls) {
  const td = row.insertCell();
  td.textContent = text === undefined || text === null ? "" : String(text);
  if (cls) td.className = cls;
  return td;
}

function startLive(table) {
  const state = document.getElementById("live-state");
  const base = table.dataset.base;
  const source = new EventSource(table.dataset.src);
  source.onopen = () => { state.textContent = "live"; state.className = "chip a-sent"; };
  source.onerror = () => { state.textContent = "reconnecting"; state.className = "chip"; };
  source.addEventListener("record", (ev) => {
    const r = JSON.parse(ev.data);
    const row = table.tBodies[0].insertRow(0);
    row.className = "ev-" + r.event;
    cell(row, r.ts);
    cell(row, r.event);
    const sid = cell(row, r.session ? "" : r.who);
    if (r.session) {
      const a = document.createElement("a");
      a.href = base + "/s/" + encodeURIComponent(r.session) + "/requests";
      a.textContent = r.session;
      a.className = "sid";
      sid.appendChild(a);
    }
    cell(row, r.route);
    cell(row, r.model);
    cell(row, r.step);
    cell(row, r.status, Number(r.status) >= 400 ? "bad" : "");
    cell(row, r.ms, "num");
    cell(row, r.what);
    while (table.tBodies[0].rows.length > 500) table.tBodies[0].deleteRow(-1);
  });
}

document.addEventListener("DOMContentLoaded", () => {
  for (const input of document.querySelectorAll("input[data-filter]")) {
    input.addEventListener("input", () => filterRows(input));
  }
  const live = document.getElementById("live");
  if (live) startLive(live);
});
