import CarWindowSDLTesting

/// The page of the browser head unit (`carwindow headunit --web PORT`): plain HTML, CSS and
/// JavaScript served from the binary, no build step and nothing from the network.
///
/// It decodes the video the head unit receives with WebCodecs (Annex-B H.264, configured from
/// each IDR's SPS), draws the app's haptic rectangles over it, shows the HMI level and stream
/// facts, and turns clicks and drags on the picture into OnTouchEvent sequences in head-unit
/// pixels (drag: pan; shift-drag: pinch around where it started; double click: double tap). Its
/// controls carry the token the server puts in place of ``WebHeadUnitServer/tokenPlaceholder``.
enum WebHeadUnitPage {
    static let html = #"""
<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>CarWindow head unit</title>
<style>
  body { font: 14px/1.4 system-ui, sans-serif; margin: 0; background: #1d2024; color: #e8e8e8; }
  header { padding: 8px 16px; background: #2b2f35; display: flex; gap: 16px; align-items: baseline; }
  header h1 { font-size: 16px; margin: 0; }
  #level { font-weight: 600; padding: 2px 8px; border-radius: 4px; background: #555; }
  #level.FULL { background: #2e7d32; } #level.LIMITED { background: #9e7a00; }
  #level.BACKGROUND, #level.NONE { background: #8e2a2a; }
  main { display: flex; gap: 16px; padding: 16px; align-items: flex-start; }
  #screen { position: relative; background: #000; border: 8px solid #333; border-radius: 12px; user-select: none; }
  #video { display: block; cursor: crosshair; }
  #regions { position: absolute; inset: 0; pointer-events: none; }
  .region { position: absolute; border: 2px solid rgba(80, 180, 255, 0.9); box-sizing: border-box; }
  .region span { position: absolute; top: 0; right: calc(100% + 3px); font-size: 10px; color: #9cf; white-space: nowrap;
                 background: rgba(0, 0, 0, 0.55); padding: 0 2px; }
  #waiting { position: absolute; inset: 0; display: flex; align-items: center; justify-content: center; color: #888; }
  aside { min-width: 280px; }
  aside section { background: #2b2f35; border-radius: 8px; padding: 8px 12px; margin-bottom: 12px; }
  aside h2 { font-size: 13px; margin: 0 0 6px; color: #aaa; text-transform: uppercase; }
  dl { display: grid; grid-template-columns: auto auto; gap: 2px 12px; margin: 0; }
  dt { color: #aaa; } dd { margin: 0; font-variant-numeric: tabular-nums; }
  button, select { font: inherit; margin: 2px; padding: 3px 8px; background: #3b4048; color: #eee; border: 1px solid #555; border-radius: 4px; }
  button:hover { background: #4b5058; }
  .pad { display: grid; grid-template-columns: repeat(3, auto); justify-content: start; }
  #log { font: 12px monospace; color: #aaa; max-height: 120px; overflow: auto; white-space: pre-wrap; }
</style>
</head>
<body>
<header><h1>CarWindow head unit</h1><span id="level">no app</span><span id="app"></span></header>
<main>
  <div id="screen">
    <canvas id="video" width="800" height="480"></canvas>
    <div id="regions"></div>
    <div id="waiting">waiting for video</div>
  </div>
  <aside>
    <section><h2>Stream</h2><dl>
      <dt>size</dt><dd id="size">-</dd>
      <dt>frames decoded</dt><dd id="frames">0</dd>
      <dt>frame rate</dt><dd id="fps">-</dd>
      <dt>bitrate</dt><dd id="bitrate">-</dd>
      <dt>IDR pictures</dt><dd id="idrs">0</dd>
      <dt>keep-alives</dt><dd id="keepalives">0</dd>
      <dt>units received</dt><dd id="units">0</dd>
    </dl></section>
    <section><h2>HMI level</h2>
      <button data-level="FULL">FULL</button><button data-level="LIMITED">LIMITED</button>
      <button data-level="BACKGROUND">BACKGROUND</button><button data-level="NONE">NONE</button>
    </section>
    <section><h2>Screen</h2>
      <select id="sizes"><option>800x480</option><option>640x384</option><option>480x320</option><option>1280x720</option><option>800x380</option></select>
      <button id="resize">resize</button><button id="refuse">refuse size</button><br>
      <button id="day">day</button><button id="night">night</button>
    </section>
    <section><h2>Keys</h2><div class="pad">
      <button data-key="NAV_ZOOM_IN">+</button><button data-key="NAV_PAN_UP">&uarr;</button><button data-key="NAV_ZOOM_OUT">&minus;</button>
      <button data-key="NAV_PAN_LEFT">&larr;</button><button data-key="OK">OK</button><button data-key="NAV_PAN_RIGHT">&rarr;</button>
      <button data-key="NAV_CENTER_LOCATION">center</button><button data-key="NAV_PAN_DOWN">&darr;</button><button data-key="NAV_HEADING_TOGGLE">N</button>
    </div></section>
    <section><h2>Touch</h2>Click: tap. Drag: pan. Shift-drag: pinch. Double click: double tap.</section>
    <section><h2>Log</h2><div id="log"></div></section>
  </aside>
</main>
<script>
"use strict";
const canvas = document.getElementById("video"), context = canvas.getContext("2d");
const $ = id => document.getElementById(id);
const page = { display: { width: 800, height: 480 }, frames: 0, units: 0, idrs: 0, keepAlives: 0, bytes: [], shown: [] };
window.headUnit = page;
let decoder = null, parameterSets = "";

function log(text) { const line = $("log"); line.textContent = (new Date().toLocaleTimeString()) + " " + text + "\n" + line.textContent.slice(0, 4000); }
// One request at a time, in order: separate requests could overtake each other on their way to
// the head unit, and a touch's END before its BEGIN is no tap. JSON and the page's token are what
// the head unit takes controls with: another site can send neither.
const token = "\#(WebHeadUnitServer.tokenPlaceholder)";
let sending = Promise.resolve();
function post(control) {
  sending = sending.then(() => fetch("/control", {
      method: "POST", headers: { "Content-Type": "application/json", "X-CarWindow-Token": token }, body: JSON.stringify(control) })
    .then(response => response.ok || response.text().then(text => log("control refused: " + text))))
    .catch(e => log("control: " + e));
  return sending;
}

// Annex-B NAL units of an access unit.
function nalUnits(bytes) {
  const units = [];
  let start = -1;
  for (let i = 0; i + 2 < bytes.length; i++) {
    if (bytes[i] === 0 && bytes[i + 1] === 0 && bytes[i + 2] === 1) {
      if (start >= 0) units.push(bytes.subarray(start, i > 0 && bytes[i - 1] === 0 ? i - 1 : i));
      start = i + 3; i += 2;
    }
  }
  if (start >= 0) units.push(bytes.subarray(start));
  return units;
}
const hex = b => b.toString(16).padStart(2, "0");

function configure(sps, key) {
  if (decoder && key === parameterSets) return;
  if (decoder) { try { decoder.close(); } catch (e) {} }
  parameterSets = key;
  decoder = new VideoDecoder({
    output: frame => {
      if (canvas.width !== frame.displayWidth || canvas.height !== frame.displayHeight) {
        canvas.width = frame.displayWidth; canvas.height = frame.displayHeight; layout();
      }
      context.drawImage(frame, 0, 0);
      frame.close();
      page.frames++; page.shown.push(performance.now());
      $("waiting").style.display = "none";
    },
    error: e => { log("decoder: " + e.message); decoder = null; parameterSets = ""; }
  });
  // No description: the chunks are Annex-B, with SPS and PPS in band before every IDR.
  decoder.configure({ codec: "avc1." + hex(sps[1]) + hex(sps[2]) + hex(sps[3]), optimizeForLatency: true });
  log("decoder set up for avc1." + hex(sps[1]) + hex(sps[2]) + hex(sps[3]));
}

function onVideo(message) {
  const bytes = Uint8Array.from(atob(message.data), c => c.charCodeAt(0));
  page.units++; page.bytes.push([performance.now(), bytes.length]);
  const units = nalUnits(bytes);
  const types = units.map(u => u[0] & 0x1f);
  if (message.key) {
    page.idrs++;
    const sps = units.find(u => (u[0] & 0x1f) === 7), pps = units.find(u => (u[0] & 0x1f) === 8);
    if (sps && pps) configure(sps, Array.from(sps).join(",") + "/" + Array.from(pps).join(","));
  } else if (bytes.length < 64 && types.every(t => t === 1 || t === 9)) {
    page.keepAlives++;   // a skip picture: a few bytes that repeat the last one
  }
  if (!decoder || decoder.state !== "configured") return;
  decoder.decode(new EncodedVideoChunk({ type: message.key ? "key" : "delta", timestamp: message.seq * 1000, data: bytes }));
}

function layout() {
  // The picture shown at the head unit's own size: touches and rectangles are in its pixels.
  canvas.style.width = page.display.width + "px";
  canvas.style.height = page.display.height + "px";
}

function onState(state) {
  const level = state.level || "no app";
  $("level").textContent = level; $("level").className = state.level || "";
  $("app").textContent = state.app ? state.app + (state.connected ? "" : " (gone)") : "";
  if (state.display && (state.display.width !== page.display.width || state.display.height !== page.display.height)) {
    page.display = state.display; layout();
  }
  $("size").textContent = state.video ? state.video.width + "x" + state.video.height + " (screen " + page.display.width + "x" + page.display.height + ")" : "no video";
  const regions = $("regions");
  regions.innerHTML = "";
  for (const r of state.regions || []) {
    const box = document.createElement("div");
    box.className = "region";
    box.style.left = r.x + "px"; box.style.top = r.y + "px"; box.style.width = r.width + "px"; box.style.height = r.height + "px";
    box.innerHTML = "<span>#" + r.id + "</span>";
    regions.appendChild(box);
  }
  page.regions = state.regions || [];
  page.level = state.level;
}

setInterval(() => {
  const now = performance.now();
  page.shown = page.shown.filter(t => now - t < 1000);
  page.bytes = page.bytes.filter(([t]) => now - t < 1000);
  $("frames").textContent = page.frames;
  $("fps").textContent = page.shown.length + " fps";
  $("bitrate").textContent = (page.bytes.reduce((sum, [, n]) => sum + n, 0) * 8 / 1000).toFixed(0) + " kbit/s";
  $("idrs").textContent = page.idrs; $("keepalives").textContent = page.keepAlives; $("units").textContent = page.units;
}, 250);

// Touches, as a head unit sends OnTouchEvent: BEGIN, MOVE while held, END; whole pixels.
let down = null, lastMove = 0;
function point(event) {
  const box = canvas.getBoundingClientRect();
  return { x: Math.round((event.clientX - box.left) * page.display.width / box.width),
           y: Math.round((event.clientY - box.top) * page.display.height / box.height) };
}
function fingers(p) {
  const ts = Math.round(performance.now());
  const list = [{ id: 0, ts, x: p.x, y: p.y }];
  if (down && down.pinch) list.push({ id: 1, ts, x: 2 * down.start.x - p.x, y: 2 * down.start.y - p.y });
  return list;
}
canvas.addEventListener("mousedown", event => {
  event.preventDefault();
  const p = point(event);
  down = { start: p, pinch: event.shiftKey };
  post({ action: "touch", type: "BEGIN", touches: fingers(p) });
});
window.addEventListener("mousemove", event => {
  if (!down || performance.now() - lastMove < 30) return;
  lastMove = performance.now();
  post({ action: "touch", type: "MOVE", touches: fingers(point(event)) });
});
window.addEventListener("mouseup", event => {
  if (!down) return;
  post({ action: "touch", type: "END", touches: fingers(point(event)) });
  down = null;
});

document.querySelectorAll("[data-level]").forEach(b => b.onclick = () => post({ action: "level", level: b.dataset.level }));
document.querySelectorAll("[data-key]").forEach(b => b.onclick = () => post({ action: "button", name: b.dataset.key }));
const chosen = () => { const [width, height] = $("sizes").value.split("x").map(Number); return { width, height }; };
$("resize").onclick = () => post({ action: "resize", ...chosen() });
$("refuse").onclick = () => post({ action: "refuse", ...chosen() });
$("day").onclick = () => post({ action: "light", night: false });
$("night").onclick = () => post({ action: "light", night: true });

const events = new EventSource("/events");
events.addEventListener("video", e => onVideo(JSON.parse(e.data)));
events.addEventListener("state", e => onState(JSON.parse(e.data)));
events.onerror = () => log("event stream interrupted; reconnecting");
if (typeof VideoDecoder === "undefined") log("this browser has no WebCodecs VideoDecoder: use a recent Chromium or Firefox");
layout();
</script>
</body>
</html>
"""#
}
