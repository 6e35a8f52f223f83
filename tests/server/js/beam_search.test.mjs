// vLLM's beam-search fields through a real `pagoda serve` (demo model): use_beam_search with
// best_of 1 returns the greedy completion; best_of 4 returns n ranked beams as choices on
// /v1/completions and /v1/chat/completions; unsupported combinations are 400s naming the field.
// The beams' tokens are checked against a brute-force reference in beam_search_test (C++).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { startServer, skipReason } from './harness.mjs';

const skip = skipReason();
let server;

before(async () => {
  if (skip) return;
  server = await startServer(['--max-num-seqs', '8']);
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

async function post(path, body) {
  const r = await fetch(`${server.url}${path}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

const prompt = 'Once upon a time there was a little';

test('best_of 1 beam search is greedy decoding', { skip }, async () => {
  const greedy = await post('/v1/completions', { prompt, max_tokens: 10, temperature: 0, ignore_eos: true });
  assert.equal(greedy.status, 200, JSON.stringify(greedy.json));
  const beam = await post('/v1/completions', {
    prompt, max_tokens: 10, use_beam_search: true, best_of: 1, ignore_eos: true,
  });
  assert.equal(beam.status, 200, JSON.stringify(beam.json));
  assert.equal(beam.json.choices.length, 1);
  assert.equal(beam.json.choices[0].text, greedy.json.choices[0].text);
  assert.equal(beam.json.usage.completion_tokens, 10);
});

test('best_of 4 returns the n best beams as choices', { skip }, async () => {
  const r = await post('/v1/completions', {
    prompt, max_tokens: 6, use_beam_search: true, best_of: 4, n: 3, ignore_eos: true,
    length_penalty: 1.0, early_stopping: 'never',
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const choices = r.json.choices;
  assert.deepEqual(choices.map((c) => c.index), [0, 1, 2]);
  for (const c of choices) assert.equal(c.finish_reason, 'length');
  assert.equal(new Set(choices.map((c) => c.text)).size, 3, 'the beams differ');
  assert.equal(r.json.usage.completion_tokens, 18);
  // Deterministic: the same request returns the same beams.
  const again = await post('/v1/completions', {
    prompt, max_tokens: 6, use_beam_search: true, best_of: 4, n: 3, ignore_eos: true,
    length_penalty: 1.0, early_stopping: 'never',
  });
  assert.deepEqual(again.json.choices.map((c) => c.text), choices.map((c) => c.text));
});

test('chat completions take the beam-search fields too', { skip }, async () => {
  const r = await post('/v1/chat/completions', {
    messages: [{ role: 'user', content: 'Tell me a story.' }],
    max_tokens: 5, use_beam_search: true, n: 2, early_stopping: true,
  });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  assert.equal(r.json.choices.length, 2);
});

test('unsupported combinations are refused by name', { skip }, async () => {
  const base = { prompt, max_tokens: 4, use_beam_search: true, best_of: 2 };
  const cases = [
    [{ ...base, stream: true }, 'stream'],
    [{ ...base, temperature: 0.8 }, 'temperature'],
    [{ ...base, n: 3 }, 'n'],
    [{ ...base, early_stopping: 'sometimes' }, 'early_stopping'],
    [{ ...base, length_penalty: 'long' }, 'length_penalty'],
    [{ ...base, best_of: 11 }, 'best_of'],
    [{ ...base, top_p: 0.5 }, 'top_p'],
    [{ ...base, logprobs: 2 }, 'logprobs'],
    [{ ...base, stop: ['.'] }, 'stop'],
    [{ ...base, use_beam_search: 'yes' }, 'use_beam_search'],
    [{ prompt, max_tokens: 4, length_penalty: 2 }, 'length_penalty'],
    [{ prompt, max_tokens: 4, early_stopping: true }, 'early_stopping'],
    [{ prompt, max_tokens: 4, best_of: 2 }, 'best_of'],
  ];
  for (const [body, field] of cases) {
    const r = await post('/v1/completions', body);
    assert.equal(r.status, 400, `${field}: ${JSON.stringify(r.json)}`);
    assert.equal(r.json.error.param, field, JSON.stringify(r.json));
  }
});
