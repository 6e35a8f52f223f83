// Test harness: starts `pagoda serve` on an ephemeral port (PAGODA_BIN, PAGODA_MODEL from CTest),
// waits for /health, and offers raw HTTP helpers and a /metrics parser.
import { spawn } from 'node:child_process';
import net from 'node:net';
import fs from 'node:fs';

export const BIN = process.env.PAGODA_BIN;
export const MODEL = process.env.PAGODA_MODEL;

// A reason to skip (run by hand without ctest's environment), or false. Under ctest (which sets
// PAGODA_BIN and PAGODA_MODEL) a missing binary or model is a failure, never a silent skip.
export function skipReason() {
  if (!BIN && !MODEL) return 'PAGODA_BIN and PAGODA_MODEL are not set (run through ctest)';
  if (!BIN || !fs.existsSync(BIN)) throw new Error(`pagoda binary not found (PAGODA_BIN=${BIN})`);
  if (!MODEL || !fs.existsSync(MODEL)) throw new Error(`model not found (PAGODA_MODEL=${MODEL})`);
  return false;
}

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

export async function startServer(args = [], { waitReady = true, env = {}, port = 0, threads = 2, model = MODEL } = {}) {
  const proc = spawn(
    BIN,
    ['serve', '-m', model, '--host', '127.0.0.1', '--port', String(port), '--threads', String(threads), ...args],
    { stdio: ['ignore', 'ignore', 'pipe'], env: { ...process.env, ...env } },
  );
  let log = '';
  const exited = new Promise((resolve) => proc.on('exit', (code, signal) => resolve({ code, signal })));
  const url = await new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`server did not listen; log:\n${log}`)), 30000);
    proc.stderr.on('data', (d) => {
      log += d.toString();
      const m = log.match(/listening on http:\/\/([0-9.]+):(\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve(`http://${m[1]}:${m[2]}`);
      }
    });
    exited.then(({ code }) => reject(new Error(`server exited (${code}) before listening:\n${log}`)));
  });
  const server = {
    url,
    proc,
    exited,
    log: () => log,
    port: Number(new URL(url).port),
    async stop(signal = 'SIGTERM') {
      if (proc.exitCode === null && proc.signalCode === null) proc.kill(signal);
      return exited;
    },
  };
  if (waitReady) await waitHealthy(url);
  return server;
}

export async function waitHealthy(url, timeoutMs = 120000) {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      const r = await fetch(`${url}/health`);
      if (r.status === 200) return;
    } catch {}
    if (Date.now() > deadline) throw new Error('server not healthy in time');
    await sleep(50);
  }
}

// Prometheus text -> Map("name{labels}" -> number) and a helper summing a family by name.
export function parseMetrics(text) {
  const values = new Map();
  for (const line of text.split('\n')) {
    if (!line || line.startsWith('#')) continue;
    const i = line.lastIndexOf(' ');
    values.set(line.slice(0, i), Number(line.slice(i + 1)));
  }
  return values;
}

export async function metrics(url) {
  const r = await fetch(`${url}/metrics`);
  return parseMetrics(await r.text());
}

// The first sample of `name` whose labels include every `key="value"` of `match`.
export function metric(values, name, match = {}) {
  for (const [k, v] of values) {
    const brace = k.indexOf('{');
    const n = brace < 0 ? k : k.slice(0, brace);
    if (n !== name) continue;
    if (Object.entries(match).every(([lk, lv]) => k.includes(`${lk}="${lv}"`))) return v;
  }
  return undefined;
}

// Polls until metric `name` satisfies `pred` (or the timeout); returns the last value.
export async function waitMetric(url, name, pred, timeoutMs = 5000, match = {}) {
  const deadline = Date.now() + timeoutMs;
  let v;
  for (;;) {
    v = metric(await metrics(url), name, match);
    if (pred(v)) return v;
    if (Date.now() > deadline) return v;
    await sleep(20);
  }
}

// Sends raw bytes on a fresh connection and resolves with {status, headers, body, ms} once the
// server closes or a full response arrived (Content-Length).
export function rawRequest(port, data, { timeoutMs = 10000, keepOpen = false } = {}) {
  return new Promise((resolve, reject) => {
    const t0 = performance.now();
    const sock = net.connect(port, '127.0.0.1');
    let buf = Buffer.alloc(0);
    let done = false;
    const finish = (err) => {
      if (done) return;
      done = true;
      clearTimeout(timer);
      sock.destroy();
      if (err) return reject(err);
      resolve(parseResponse(buf, performance.now() - t0));
    };
    const timer = setTimeout(() => finish(new Error(`no response in ${timeoutMs} ms`)), timeoutMs);
    sock.on('error', (e) => {
      // A reset after the response arrived is fine (the server closed with unread input).
      if (buf.length > 0) finish(); else finish(e);
    });
    sock.on('data', (d) => {
      buf = Buffer.concat([buf, d]);
      const r = parseResponse(buf, 0);
      if (r && r.complete && !keepOpen) finish();
    });
    sock.on('end', () => finish());
    sock.on('connect', () => {
      const chunks = Array.isArray(data) ? data : [data];
      for (const c of chunks) sock.write(c);
    });
  });
}

export function parseResponse(buf, ms) {
  const s = buf.toString('latin1');
  const end = s.indexOf('\r\n\r\n');
  if (end < 0) return { status: 0, headers: {}, body: '', complete: false, ms };
  const lines = s.slice(0, end).split('\r\n');
  const status = Number(lines[0].split(' ')[1]);
  const headers = {};
  for (const l of lines.slice(1)) {
    const i = l.indexOf(':');
    headers[l.slice(0, i).toLowerCase()] = l.slice(i + 1).trim();
  }
  const body = buf.subarray(end + 4).toString('utf8');
  const len = headers['content-length'];
  const complete = len !== undefined && Buffer.byteLength(body) >= Number(len);
  return { status, headers, body, complete, ms };
}

// Reads an SSE stream from a fetch Response: returns the list of `data:` payloads.
export async function readSse(response) {
  const text = await response.text();
  return text
    .split('\n\n')
    .filter((e) => e.startsWith('data: '))
    .map((e) => e.slice(6));
}

export { sleep };

// Starts `pagoda router` on the YAML `config` (written to a temporary file; listen port 0) and
// resolves with {proc, url, configPath, log()} once it listens. `softFileLimit` starts it under
// that soft open-file limit (through the shell's ulimit).
export async function startRouter(config, { threads = 2, softFileLimit = 0 } = {}) {
  const os = await import('node:os');
  const path = await import('node:path');
  const configPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-router-')), 'router.yaml');
  fs.writeFileSync(configPath, config);
  const args = ['router', '--config', configPath, '--threads', String(threads)];
  const proc = softFileLimit
    ? spawn('sh', ['-c', `ulimit -Sn ${softFileLimit} && exec "$0" "$@"`, BIN, ...args], {
      stdio: ['ignore', 'pipe', 'pipe'],
    })
    : spawn(BIN, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  proc.stderr.on('data', (d) => (err += d.toString()));
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => reject(new Error(`router did not listen: ${err}`)), 10000);
    proc.stdout.on('data', (d) => {
      out += d.toString();
      const m = out.match(/listening on port (\d+)/);
      if (m) {
        clearTimeout(timer);
        resolve({ proc, url: `http://127.0.0.1:${m[1]}`, configPath, log: () => err });
      }
    });
    proc.on('exit', (code) => reject(new Error(`router exited (${code}): ${err}`)));
  });
}
