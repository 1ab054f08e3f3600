// Opens an agentv HTML report in headless Chromium and checks it as a person would use it:
// the table shows every case, the filter narrows it, a click opens a case's drill-down with its
// answer and a grader's misses, hostile answers stay text, and the page makes no network
// request. Saves screenshots and prints one JSON object with what it saw and how long the
// page took to become interactive.
//
// No dependencies: Node ≥ 18 talks to Chromium over the DevTools protocol on a pipe
// (--remote-debugging-pipe), so no websocket library or browser download is needed.
//
// Usage: node report_check.mjs SPEC.json
//   SPEC: {"html": path, "screenshots": dir, "chromium": "/usr/bin/chromium",
//          "filter": text, "open": case id, "checks": true|false}
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync, mkdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join, resolve } from 'node:path';
import { pathToFileURL } from 'node:url';

const spec = JSON.parse(readFileSync(process.argv[2], 'utf8'));
const chromium = spec.chromium || '/usr/bin/chromium';
const profile = mkdtempSync(join(tmpdir(), 'agentv-chromium-'));
const browser = spawn(chromium, [
  '--headless', '--no-sandbox', '--disable-gpu', '--disable-background-networking',
  '--disable-component-update', '--no-first-run', '--no-default-browser-check',
  '--disable-sync', '--disable-extensions', '--disable-default-apps', '--mute-audio',
  `--user-data-dir=${profile}`, '--remote-debugging-pipe', 'about:blank',
], { stdio: ['ignore', 'ignore', 'pipe', 'pipe', 'pipe'] });
let stderr = '';
browser.stderr.on('data', (d) => { stderr += d; });
const toChrome = browser.stdio[3];
const fromChrome = browser.stdio[4];

let nextId = 1;
const pending = new Map();
const listeners = [];
let buffered = Buffer.alloc(0);
fromChrome.on('data', (chunk) => {
  buffered = Buffer.concat([buffered, chunk]);
  let end;
  while ((end = buffered.indexOf(0)) !== -1) {
    const message = JSON.parse(buffered.subarray(0, end).toString('utf8'));
    buffered = buffered.subarray(end + 1);
    if (message.id && pending.has(message.id)) {
      const { resolve: ok, reject } = pending.get(message.id);
      pending.delete(message.id);
      if (message.error) reject(new Error(JSON.stringify(message.error))); else ok(message.result);
    } else if (message.method) {
      listeners.forEach((l) => l(message));
    }
  }
});

function send(method, params = {}, sessionId) {
  const id = nextId++;
  const message = { id, method, params };
  if (sessionId) message.sessionId = sessionId;
  toChrome.write(JSON.stringify(message) + '\0');
  return new Promise((ok, reject) => {
    pending.set(id, { resolve: ok, reject });
    setTimeout(() => reject(new Error(`timeout: ${method}`)), 60000).unref();
  });
}

function waitFor(predicate, what, ms = 60000) {
  return new Promise((ok, reject) => {
    const timer = setTimeout(() => reject(new Error(`timeout waiting for ${what}`)), ms);
    listeners.push((m) => { if (predicate(m)) { clearTimeout(timer); ok(m); } });
  });
}

const failures = [];
function check(ok, what) { if (!ok) failures.push(what); }

async function main() {
  const html = resolve(spec.html);
  const url = pathToFileURL(html).href;
  const { targetId } = await send('Target.createTarget', { url: 'about:blank' });
  const { sessionId } = await send('Target.attachToTarget', { targetId, flatten: true });
  const s = (method, params) => send(method, params, sessionId);
  const requests = [];
  listeners.push((m) => {
    if (m.sessionId === sessionId && m.method === 'Network.requestWillBeSent') requests.push(m.params.request.url);
  });
  await s('Network.enable');
  await s('Page.enable');
  await s('Runtime.enable');
  await s('Page.bringToFront');
  await s('Emulation.setFocusEmulationEnabled', { enabled: true });
  await s('Emulation.setDeviceMetricsOverride', { width: 1440, height: 900, deviceScaleFactor: 1, mobile: false });
  const evaluate = async (expression) => {
    const r = await s('Runtime.evaluate', { expression, returnByValue: true, awaitPromise: true });
    if (r.exceptionDetails) throw new Error(`page error: ${JSON.stringify(r.exceptionDetails)}`);
    return r.result.value;
  };

  const loaded = waitFor((m) => m.sessionId === sessionId && m.method === 'Page.loadEventFired', 'load');
  const started = performance.now();
  await s('Page.navigate', { url });
  await loaded;
  let ready = null;
  for (let i = 0; i < 600 && ready === null; i++) {
    ready = await evaluate("document.documentElement.getAttribute('data-ready')");
    if (ready === null) await new Promise((r) => setTimeout(r, 50));
  }
  const wall = performance.now() - started;
  const timing = await evaluate(`(() => { const n = performance.getEntriesByType('navigation')[0];
    return { domContentLoaded: n.domContentLoadedEventEnd, load: n.loadEventEnd,
             interactive: window.agentvReport ? window.agentvReport.ready : null }; })()`);
  const out = { ready: ready !== null, cases: ready === null ? null : Number(ready), wall_ms: Math.round(wall), timing };
  check(ready !== null, 'the page never became ready (script error?)');

  const rows = () => evaluate("document.querySelectorAll('#cases tbody tr').length");
  out.rows = await rows();
  out.shown = await evaluate("document.getElementById('shown').textContent");
  if (spec.screenshots) mkdirSync(spec.screenshots, { recursive: true });
  const shot = async (name) => {
    if (!spec.screenshots) return;
    const { data } = await s('Page.captureScreenshot', { format: 'png' });
    writeFileSync(join(spec.screenshots, name), Buffer.from(data, 'base64'));
  };
  await shot(spec.prefix ? `${spec.prefix}-table.png` : 'report.png');

  if (spec.filter !== undefined) {
    await evaluate("document.getElementById('filter').focus()");
    const t0 = performance.now();
    await s('Input.insertText', { text: spec.filter });
    out.filtered_rows = await rows();
    out.filter_ms = Math.round(performance.now() - t0);
    out.filtered_ids = await evaluate("Array.from(document.querySelectorAll('#cases tbody tr td.id')).map(td => td.textContent)");
    // Clear the filter again.
    await evaluate("(() => { const f = document.getElementById('filter'); f.value = ''; f.dispatchEvent(new Event('input')); })()");
  }

  if (spec.open !== undefined) {
    const box = await evaluate(`(() => {
      const td = Array.from(document.querySelectorAll('#cases tbody td.id')).find(td => td.textContent === ${JSON.stringify(spec.open)});
      if (!td) return null;
      td.scrollIntoView({ block: 'center' });
      const r = td.getBoundingClientRect();
      return { x: r.x + r.width / 2, y: r.y + r.height / 2 };
    })()`);
    check(box !== null, `no row for case ${spec.open}`);
    if (box) {
      const t0 = performance.now();
      for (const type of ['mouseMoved', 'mousePressed', 'mouseReleased']) {
        await s('Input.dispatchMouseEvent', { type, x: box.x, y: box.y, button: 'left', clickCount: 1 });
      }
      out.detail_open = await evaluate("!document.getElementById('detail').hidden");
      out.open_ms = Math.round(performance.now() - t0);
      out.detail_title = await evaluate("document.getElementById('detail-title').textContent");
      out.detail_text = await evaluate("document.getElementById('detail-body').innerText");
      // Open every fold (as a reader would) to see the judge prompt and the raw record too.
      await evaluate("document.querySelectorAll('#detail details').forEach(d => d.open = true)");
      out.detail_unfolded = await evaluate("document.getElementById('detail-body').innerText");
      await shot(spec.prefix ? `${spec.prefix}-detail.png` : 'report-detail.png');
    }
  }
  out.injected = await evaluate("({ pwned: window.__pwned === 1, imgs: document.querySelectorAll('img').length, scripts: document.querySelectorAll('script:not([type])').length })");
  out.requests = requests.filter((u) => u !== url);
  return out;
}

let result;
try {
  result = await main();
  result.failures = failures;
} catch (e) {
  result = { error: String(e && e.stack || e), chromium_stderr: stderr.slice(-2000) };
}
try { await send('Browser.close'); } catch { /* already gone */ }
browser.kill('SIGKILL');
// Chromium's helper processes may write to the profile for a moment after the main process is
// killed (ENOTEMPTY under load); a temporary directory left behind must not fail the check.
try {
  rmSync(profile, { recursive: true, force: true, maxRetries: 10, retryDelay: 100 });
} catch { /* left for the system's temporary-file cleanup */ }
process.stdout.write(JSON.stringify(result) + '\n');
process.exit(result.error ? 2 : 0);
