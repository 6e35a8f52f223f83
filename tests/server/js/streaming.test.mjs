// Streaming edge cases against `pagoda serve` on the bundled model: multi-byte characters split
// across byte-fallback tokens (every SSE event stays valid UTF-8), stop strings split across
// tokens (never streamed, not even a prefix), and streamed == non-streamed text.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skipReason } from './harness.mjs';

const skip = skipReason();
let server;
let model;

before(async () => {
  if (skip) return;
  server = await startServer();
  model = (await (await fetch(`${server.url}/v1/models`)).json()).data[0].id;
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

async function post(path, body) {
  return fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model, ...body }),
  });
}

// Streams a completion; returns the raw event byte strings (validated as UTF-8) and the parsed
// chunks.
async function streamRaw(path, body) {
  const r = await post(path, { ...body, stream: true });
  assert.equal(r.status, 200);
  const bytes = Buffer.from(await r.arrayBuffer());
  const events = [];
  let start = 0;
  for (;;) {
    const end = bytes.indexOf('\n\n', start);
    if (end < 0) break;
    events.push(bytes.subarray(start, end));
    start = end + 2;
  }
  assert.equal(start, bytes.length, 'the stream ends on an event boundary');
  const decoder = new TextDecoder('utf-8', { fatal: true });
  const payloads = events.map((e) => decoder.decode(e)); // throws on invalid UTF-8
  assert.equal(payloads.at(-1), 'data: [DONE]');
  const chunks = payloads.slice(0, -1).map((p) => {
    assert.ok(p.startsWith('data: '));
    return JSON.parse(p.slice(6));
  });
  return chunks;
}

function completionText(chunks, index = 0) {
  return chunks.flatMap((c) => c.choices.filter((x) => x.index === index).map((x) => x.text)).join('');
}

test('multi-byte characters split across byte tokens stream as valid UTF-8', { skip }, async () => {
  // The demo vocab has byte-fallback tokens <0x00>..<0xFF> at ids 3..258: check that first.
  const probe = await (await post('/detokenize', { tokens: [3 + 0xc3, 3 + 0xa9, 3 + 0xe2, 3 + 0x82, 3 + 0xac] })).json();
  if (probe.prompt !== 'é€') {
    test.skip?.('byte tokens are not at 3 + byte in this vocab');
    return;
  }
  // Only those five byte tokens are likely: the output is a mix of whole and broken characters.
  const logit_bias = {};
  for (const b of [0xc3, 0xa9, 0xe2, 0x82, 0xac]) logit_bias[3 + b] = 100;
  const body = { prompt: 'Once upon a time', max_tokens: 40, temperature: 0, logit_bias, ignore_eos: true };
  const full = await (await post('/v1/completions', body)).json();
  const text = full.choices[0].text;
  assert.equal(full.usage.completion_tokens, 40);
  assert.ok(/[é€\uFFFD]/u.test(text), `expected multi-byte characters, got ${JSON.stringify(text)}`);
  const chunks = await streamRaw('/v1/completions', body);
  assert.equal(completionText(chunks), text);
  // The same through chat (delta.content).
  const chat = { messages: [{ role: 'user', content: 'Hi' }], max_tokens: 25, temperature: 0, logit_bias, ignore_eos: true };
  const fullChat = await (await post('/v1/chat/completions', chat)).json();
  const chatChunks = await streamRaw('/v1/chat/completions', chat);
  const streamed = chatChunks.map((c) => c.choices[0]?.delta?.content ?? '').join('');
  assert.equal(streamed, fullChat.choices[0].message.content);
});

test('a stop string split across tokens is never streamed', { skip }, async () => {
  const body = { prompt: 'Once upon a time', max_tokens: 48, temperature: 0 };
  const chunks = await streamRaw('/v1/completions', body);
  const pieces = chunks.map((c) => c.choices[0]?.text ?? '').filter((t) => t.length > 0);
  const free = pieces.join('');
  // A token boundary in the middle: the stop string is the last character before it and the
  // first two after it.
  let k = Math.floor(pieces.length / 2);
  while (k < pieces.length - 1 && pieces[k + 1].length < 2) ++k;
  assert.ok(k < pieces.length - 1, 'need a boundary followed by a 2+ character token');
  const before = pieces.slice(0, k + 1).join('');
  const stop = before.slice(-1) + pieces[k + 1].slice(0, 2);
  const expected = free.slice(0, free.indexOf(stop));
  const nonStreamed = await (await post('/v1/completions', { ...body, stop: [stop] })).json();
  assert.equal(nonStreamed.choices[0].text, expected);
  assert.equal(nonStreamed.choices[0].finish_reason, 'stop');
  const streamed = await streamRaw('/v1/completions', { ...body, stop: [stop] });
  let acc = '';
  for (const c of streamed) {
    acc += c.choices[0]?.text ?? '';
    // No prefix of what follows the cut ever reached the client.
    assert.ok(expected.startsWith(acc), `streamed past the stop: ${JSON.stringify(acc)}`);
  }
  assert.equal(acc, expected);

  // A stop string whose prefix matches but which never completes: the held-back text is
  // released, nothing is lost.
  const never = pieces[k].slice(-1) + '\u0007';
  const all = await streamRaw('/v1/completions', { ...body, stop: [never] });
  assert.equal(completionText(all), free);
});

test('streamed equals non-streamed: greedy and seeded, n = 2', { skip }, async () => {
  for (const sampling of [{ temperature: 0 }, { temperature: 0.9, seed: 7 }]) {
    const body = {
      messages: [{ role: 'user', content: 'Tell me about the river.' }],
      max_tokens: 32,
      n: 2,
      ...sampling,
    };
    const full = await (await post('/v1/chat/completions', body)).json();
    const chunks = await streamRaw('/v1/chat/completions', body);
    for (const index of [0, 1]) {
      const streamed = chunks
        .flatMap((c) => c.choices.filter((x) => x.index === index))
        .map((x) => x.delta.content ?? '')
        .join('');
      assert.equal(streamed, full.choices[index].message.content, JSON.stringify(sampling));
    }
  }
});
