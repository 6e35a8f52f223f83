// Issue 40 against a real `pagoda serve` on the demo model: prefix-cache isolation between API
// keys and cache salts (cached_tokens is how one tenant could see another's prompts), chat
// logprobs `bytes` for a token that ends inside a UTF-8 character, a FIFO as the model path,
// and the browser-origin defaults as fetch() meets them.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { startServer, skipReason, BIN, rawRequest } from './harness.mjs';

const skip = skipReason();
let server;

before(async () => {
  if (skip) return;
  server = await startServer(['--api-key', 'alice']);
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

async function complete(url, key, extra = {}) {
  // ~100 tokens of prompt: 6 full 16-token blocks can be cached.
  const prompt = 'Once upon a time there was a little fox who lived in a big green forest. '.repeat(6);
  const r = await fetch(`${url}/v1/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: `Bearer ${key}` },
    body: JSON.stringify({ prompt, max_tokens: 1, temperature: 0, ...extra }),
  });
  const j = await r.json();
  assert.equal(r.status, 200, JSON.stringify(j));
  return j.usage.prompt_tokens_details?.cached_tokens ?? 0;
}

test('prefix cache: one API key never sees what another cached', { skip }, async () => {
  const s = await startServer(['--api-key', 'alice', '--api-key', 'bob']);
  try {
    assert.equal(await complete(s.url, 'alice'), 0);
    assert.equal(await complete(s.url, 'bob'), 0, 'bob must not hit the blocks alice cached');
    assert.ok((await complete(s.url, 'alice')) > 0, 'alice still hits her own prefix');
    assert.ok((await complete(s.url, 'bob')) > 0, 'and bob his');
    // cache_salt separates further within a key.
    assert.equal(await complete(s.url, 'alice', { cache_salt: 'project-x' }), 0);
    assert.ok((await complete(s.url, 'alice', { cache_salt: 'project-x' })) > 0);
  } finally {
    assert.equal((await s.stop()).code, 0, s.log());
  }
});

test('prefix cache: --prefix-cache-isolation salt shares only between equal cache_salts', { skip }, async () => {
  const s = await startServer(['--prefix-cache-isolation', 'salt']);
  try {
    assert.equal(await complete(s.url, 'none'), 0);
    assert.equal(await complete(s.url, 'none'), 0, 'unsalted requests never share');
    assert.equal(await complete(s.url, 'none', { cache_salt: 'team' }), 0);
    assert.ok((await complete(s.url, 'none', { cache_salt: 'team' })) > 0);
  } finally {
    assert.equal((await s.stop()).code, 0, s.log());
  }
});

test('chat logprobs: bytes are the raw bytes of a token that ends inside a character', { skip }, async () => {
  // Token 231 of the demo vocabulary is the byte token <0xE4> (the first byte of "中").
  const r = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json', Authorization: 'Bearer alice' },
    body: JSON.stringify({
      messages: [{ role: 'user', content: 'hi' }],
      max_tokens: 1,
      logit_bias: { 231: 100 },
      logprobs: true,
      top_logprobs: 2,
    }),
  });
  const j = await r.json();
  assert.equal(r.status, 200, JSON.stringify(j));
  const entry = j.choices[0].logprobs.content[0];
  assert.deepEqual(entry.bytes, [228]);
  assert.equal(entry.token, '\uFFFD');
  // The alternatives (the model's own distribution) carry their raw bytes too.
  for (const alt of entry.top_logprobs) {
    assert.deepEqual(alt.bytes, [...Buffer.from(alt.token, 'utf8')], alt.token);
  }
});

test('browser-origin defaults: foreign Host and Origin refused, text/plain is 415', { skip }, async () => {
  const auth = 'Authorization: Bearer alice\r\n';
  const body = JSON.stringify({ prompt: 'Once', max_tokens: 1 });
  const post = (host, extra) =>
    `POST /v1/completions HTTP/1.1\r\nHost: ${host}\r\n${auth}${extra}Content-Length: ${body.length}\r\n\r\n${body}`;
  let r = await rawRequest(server.port, post('rebind.attacker.example', 'Content-Type: application/json\r\n'));
  assert.equal(r.status, 403);
  r = await rawRequest(server.port, post(`127.0.0.1:${server.port}`, 'Content-Type: text/plain\r\n'));
  assert.equal(r.status, 415);
  r = await rawRequest(
    server.port,
    post(`127.0.0.1:${server.port}`, 'Origin: https://attacker.example\r\nContent-Type: application/json\r\n'),
  );
  assert.equal(r.status, 403);
  r = await rawRequest(server.port, post(`localhost:${server.port}`, 'Content-Type: application/json\r\n'));
  assert.equal(r.status, 200);
  r = await rawRequest(server.port, `HEAD /health HTTP/1.1\r\nHost: localhost\r\nConnection: close\r\n\r\n`);
  assert.equal(r.status, 200);
});

test('a FIFO as the model path is refused at once by serve, inspect and logits', { skip }, () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-fifo-'));
  const fifo = path.join(dir, 'model.gguf');
  assert.equal(spawnSync('mkfifo', [fifo]).status, 0);
  try {
    for (const args of [
      ['serve', '-m', fifo, '--port', '0'],
      ['inspect', fifo],
      ['logits', '-m', fifo, '-p', 'hi'],
    ]) {
      const r = spawnSync(BIN, args, { timeout: 10000, encoding: 'utf8' });
      assert.notEqual(r.signal, 'SIGTERM', `${args[0]} hung on a FIFO`);
      assert.notEqual(r.status, 0, args[0]);
      assert.match(r.stderr, /FIFO|not a regular file/, `${args[0]}: ${r.stderr}`);
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
