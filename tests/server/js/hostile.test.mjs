// Hostile requests against a real `pagoda serve` over raw sockets: each gets the right 4xx, fast,
// and the server stays up and keeps serving. Path tricks are never answered without the key.
// Response times are printed (not asserted).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skipReason, rawRequest } from './harness.mjs';

const skip = skipReason();
let server;
const KEY = 'hostile-test-key';
const auth = `Authorization: Bearer ${KEY}\r\n`;

before(async () => {
  if (skip) return;
  server = await startServer(['--api-key', KEY, '--max-body-size', '256KiB']);
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

function post(path, body, headers = auth) {
  const b = Buffer.from(body);
  return Buffer.concat([
    Buffer.from(`POST ${path} HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\n${headers}Content-Length: ${b.length}\r\n\r\n`),
    b,
  ]);
}
const get = (path, headers = auth) => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`;
const chat = (extra) =>
  JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], max_tokens: 4, ...extra });

test('hostile requests get the right 4xx quickly and the server stays up', { skip }, async () => {
  const C = '/v1/chat/completions';
  const cases = [
    ['invalid JSON', post(C, '{"messages": nope}'), 400],
    ['truncated JSON', post(C, '{"messages": [{"role": "us'), 400],
    ['JSON array body', post(C, '[]'), 400],
    ['wrong type: messages', post(C, '{"messages": "hi"}'), 400, 'messages'],
    ['wrong type: max_tokens', post(C, chat({ max_tokens: 'ten' })), 400, 'max_tokens'],
    ['wrong type: stop', post(C, chat({ stop: { a: 1 } })), 400, 'stop'],
    ['empty prompt', post('/v1/completions', '{"prompt": ""}'), 400, 'prompt'],
    ['empty messages', post(C, '{"messages": []}'), 400, 'messages'],
    ['huge n', post(C, chat({ n: 100000 })), 400, 'n'],
    ['huge max_tokens', post(C, chat({ max_tokens: 2 ** 40 })), 400, 'max_tokens'],
    ['huge top_logprobs', post(C, chat({ logprobs: true, top_logprobs: 1e6 })), 400, 'top_logprobs'],
    ['NaN temperature', post(C, '{"messages":[{"role":"user","content":"x"}],"temperature":NaN}'), 400],
    ['temperature 1e999', post(C, '{"messages":[{"role":"user","content":"x"}],"temperature":1e999}'), 400],
    ['token id out of range', post('/v1/completions', '{"prompt": [1, 99999999]}'), 400, 'prompt'],
    ['10,000 stop strings', post(C, chat({ stop: Array.from({ length: 10000 }, (_, i) => `s${i}`) })), 400, 'stop'],
    ['deeply nested JSON', post(C, '['.repeat(100000) + ']'.repeat(100000)), 400],
    ['body over the limit', post(C, JSON.stringify({ messages: [{ role: 'user', content: 'x'.repeat(300 * 1024) }] })), 413],
    ['Content-Length over the limit, no body', `POST ${C} HTTP/1.1\r\nHost: localhost\r\n${auth}Content-Length: 99999999\r\n\r\n`, 413],
    ['1 MB header', `GET /health HTTP/1.1\r\nHost: localhost\r\nX-Big: ${'a'.repeat(1 << 20)}\r\n\r\n`, 431],
    ['long URI', get(`/v1/models?${'q'.repeat(20000)}`), 414],
    ['unknown route', get('/v1/nothing'), 404],
    ['wrong method', get(C), 405],
    ['unknown model', post(C, chat({ model: 'gpt-17' })), 404, 'model'],
    ['no key', post(C, chat(), ''), 401],
    ['wrong key', post(C, chat(), 'Authorization: Bearer nope\r\n'), 401],
    ['garbage request line', 'BLAH\r\n\r\n', 400],
  ];
  const timings = [];
  for (const [name, data, status, param] of cases) {
    const r = await rawRequest(server.port, data);
    timings.push(`${name.padEnd(40)} ${r.status} ${r.ms.toFixed(1)} ms`);
    assert.equal(r.status, status, `${name}: ${r.body.slice(0, 200)}`);
    if (r.body && r.status >= 400) {
      const j = JSON.parse(r.body);
      assert.equal(typeof j.error.message, 'string', name);
      assert.ok('type' in j.error && 'param' in j.error && 'code' in j.error, name);
      if (param) assert.equal(j.error.param, param, name);
    }
  }
  console.log(timings.join('\n'));
  assert.equal((await rawRequest(server.port, get('/health', ''))).status, 200);
  const ok = await rawRequest(server.port, post(C, chat()));
  assert.equal(ok.status, 200);
});

test('path tricks are never answered without the key', { skip }, async () => {
  const paths = [
    '/v1/models', '//v1/models', '/v1/../v1/models', '/v1/%2e%2e/v1/models', '/%2e%2e/v1/models',
    '/v1/./models', '/v1/models/', '/V1/models', '/health/../v1/models', '/metrics/../v1/models',
    '/v1/models%00', '/v1//models', 'http://127.0.0.1/v1/models', '/tokenize', '/detokenize',
  ];
  for (const p of paths) {
    for (const headers of ['', 'Authorization: Bearer wrong\r\n', `Authorization: ${KEY}\r\n`]) {
      const r = await rawRequest(server.port, get(p, headers));
      assert.equal(r.status, 401, `${p} with ${JSON.stringify(headers)}`);
      assert.ok(!r.body.includes('"object":"list"'), p);
    }
  }
  // With the key the tricks are just unknown paths.
  for (const p of ['//v1/models', '/v1/../v1/models', '/v1/%2e%2e/v1/models']) {
    assert.equal((await rawRequest(server.port, get(p))).status, 404, p);
  }
  assert.equal((await rawRequest(server.port, get('/v1/models'))).status, 200);
});

test('a slowloris header is cut off and others are still served', { skip }, async () => {
  // Half a request line, then silence: the server keeps serving everyone else meanwhile.
  const net = await import('node:net');
  const sock = net.connect(server.port, '127.0.0.1');
  await new Promise((r) => sock.on('connect', r));
  sock.write('GET /health HTTP/1.1\r\nHost: localhost\r\nX-Slow: ');
  for (let i = 0; i < 5; ++i) {
    assert.equal((await rawRequest(server.port, get('/health', ''))).status, 200);
  }
  sock.destroy();
});
