// `pagoda router` holds >= 5,000 idle keep-alive connections: each is opened, makes one request
// (GET /health, keep-alive), then idles; afterwards a fresh client is still served, and every
// idle connection is still open and answers a second request on the same socket. The router
// raises its soft open-file limit to the hard one at start; the test needs a hard limit above
// the connection count (it is skipped, saying so, where the hard limit is lower).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import http from 'node:http';
import net from 'node:net';
import { BIN, sleep, startRouter, waitHealthy } from './harness.mjs';

const NUM_CONNECTIONS = 5000;
const hardLimit = Number(execFileSync('sh', ['-c', 'ulimit -Hn'], { encoding: 'utf8' }).trim());
const skip = !BIN ? 'PAGODA_BIN is not set (run through ctest)'
  : (hardLimit < NUM_CONNECTIONS + 200 ? `hard open-file limit ${hardLimit} is below ${NUM_CONNECTIONS + 200}` : false);
let router;
let stub;
const sockets = [];

// One request on `socket`; resolves with the status line once the whole response has arrived.
function request(socket) {
  return new Promise((resolve, reject) => {
    let buf = '';
    const onData = (d) => {
      buf += d.toString();
      const head = buf.indexOf('\r\n\r\n');
      if (head < 0) return;
      const len = Number(/content-length: (\d+)/i.exec(buf.slice(0, head))?.[1] ?? 0);
      if (buf.length >= head + 4 + len) {
        socket.off('data', onData);
        socket.off('error', reject);
        resolve(buf.slice(0, buf.indexOf('\r\n')));
      }
    };
    socket.on('data', onData);
    socket.once('error', reject);
    socket.write('GET /health HTTP/1.1\r\nHost: x\r\nConnection: keep-alive\r\n\r\n');
  });
}

function open(port) {
  return new Promise((resolve, reject) => {
    const s = net.connect(port, '127.0.0.1', () => resolve(s));
    s.once('error', reject);
  });
}

before(async () => {
  if (skip) return;
  // The router needs one admitted backend for /health to be 200.
  stub = http.createServer((req, res) => res.end('{}'));
  await new Promise((r) => stub.listen(0, '127.0.0.1', r));
  // Launched with the soft limit lowered to 1024, as on a default system: the router raises it.
  router = await startRouter(`listen: {host: 127.0.0.1, port: 0}
backends: [{url: "http://127.0.0.1:${stub.address().port}", models: [m]}]
`, { threads: 1, softFileLimit: 1024 });
  await waitHealthy(router.url, 10000);
});

after(async () => {
  for (const s of sockets) s.destroy();
  if (router) {
    router.proc.kill('SIGTERM');
    await new Promise((r) => router.proc.on('exit', r));
  }
  stub?.close();
});

test(`${NUM_CONNECTIONS} idle keep-alive connections are held`, { skip, timeout: 120000 }, async () => {
  const port = Number(new URL(router.url).port);
  for (let i = 0; i < NUM_CONNECTIONS; i += 250) {
    const batch = [];
    for (let j = i; j < Math.min(i + 250, NUM_CONNECTIONS); ++j) batch.push(open(port));
    const opened = await Promise.all(batch);
    sockets.push(...opened);
    const lines = await Promise.all(opened.map(request));
    assert.ok(lines.every((l) => l === 'HTTP/1.1 200 OK'), lines.find((l) => l !== 'HTTP/1.1 200 OK'));
  }
  await sleep(500);
  // A new client is still served while all of them idle.
  assert.equal((await fetch(`${router.url}/health`)).status, 200);
  // Every idle connection is still open and still answers.
  let closed = 0;
  for (const s of sockets) closed += s.destroyed || s.readyState !== 'open' ? 1 : 0;
  assert.equal(closed, 0);
  for (let i = 0; i < sockets.length; i += 500) {
    const lines = await Promise.all(sockets.slice(i, i + 500).map(request));
    assert.ok(lines.every((l) => l === 'HTTP/1.1 200 OK'));
  }
  // Started under a soft limit of 1024 (sh exec's the router: same pid), it runs under the hard one.
  const limits = fs.readFileSync(`/proc/${router.proc.pid}/limits`, 'utf8');
  const soft = Number(/Max open files\s+(\d+)/.exec(limits)[1]);
  assert.equal(soft, hardLimit);
  console.log(`${sockets.length} keep-alive connections held and reused; open-file limit 1024 -> ${soft}`);
});
