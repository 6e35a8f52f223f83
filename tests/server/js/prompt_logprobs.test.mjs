// /v1/completions echo and vLLM's prompt_logprobs against `pagoda logits` (an independent,
// unbatched forward pass through the diagnostics path): every prompt token's logprob given the
// tokens before it, in a server whose prefill is chunked (a token budget of 16) and after the
// same prompt filled the prefix cache (a request that wants prompt logprobs takes no hit).
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { execFileSync } from 'node:child_process';
import { startServer, skipReason, BIN, MODEL } from './harness.mjs';

const skip = skipReason();
let server;
let ref;  // pagoda logits output: prompt_tokens and per-position logsumexp + every logit

const PROMPT =
  'Once upon a time there was a little fox who lived in the forest near the river. Every morning ' +
  'she walked to the water, looked at the fish and the birds, and thought about the long winter.';

before(async () => {
  if (skip) return;
  const vocab = JSON.parse(
    execFileSync(BIN, ['logits', '-m', MODEL, '-p', 'x', '-n', '0', '--top', '1'], {
      maxBuffer: 1 << 26,
    }).toString(),
  ).n_vocab;
  ref = JSON.parse(
    execFileSync(BIN, ['logits', '-m', MODEL, '-p', PROMPT, '-n', '0', '--top', String(vocab)], {
      maxBuffer: 1 << 28,
    }).toString(),
  );
  server = await startServer(['--max-num-batched-tokens', '16', '--max-num-seqs', '4']);
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

async function complete(body) {
  const r = await fetch(`${server.url}/v1/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, json: await r.json() };
}

// The reference logprob of prompt token i (i >= 1) and the reference top-k ids at row i - 1.
function expected(i, k) {
  const row = ref.positions[i - 1];
  const logit = new Map(row.top.map(([id, l]) => [id, l]));
  const token = ref.prompt_tokens[i];
  return { logprob: logit.get(token) - row.logsumexp, top: row.top.slice(0, k), lse: row.logsumexp };
}

test('prompt is long enough to be chunked', { skip }, () => {
  assert.ok(ref.prompt_tokens.length > 40, `prompt has ${ref.prompt_tokens.length} tokens`);
});

test('prompt_logprobs match an independent forward after a prefix-cache fill', { skip }, async () => {
  const prompt = ref.prompt_tokens;
  // Fill the prefix cache with the same prompt first.
  const warm = await complete({ prompt, max_tokens: 1, temperature: 0 });
  assert.equal(warm.status, 200, JSON.stringify(warm.json));
  const again = await complete({ prompt, max_tokens: 1, temperature: 0 });
  assert.ok(again.json.usage.prompt_tokens_details.cached_tokens > 0, 'the cache serves the prompt');

  const k = 3;
  const r = await complete({ prompt, max_tokens: 2, temperature: 0, prompt_logprobs: k });
  assert.equal(r.status, 200, JSON.stringify(r.json));
  const pl = r.json.choices[0].prompt_logprobs;
  assert.equal(pl.length, prompt.length);
  assert.equal(pl[0], null);
  assert.equal(r.json.usage.prompt_tokens_details.cached_tokens, 0);
  for (let i = 1; i < prompt.length; ++i) {
    const e = expected(i, k);
    const entry = pl[i];
    const own = entry[String(prompt[i])];
    assert.ok(own, `position ${i} lists its prompt token`);
    assert.ok(Math.abs(own.logprob - e.logprob) < 2e-3, `position ${i}: ${own.logprob} vs ${e.logprob}`);
    // rank: 1 + tokens with a higher reference logit (ties within the tolerance excluded)
    const row = ref.positions[i - 1].top;
    const ownLogit = e.logprob + e.lse;
    const lo = row.filter(([, l]) => l > ownLogit + 1e-3).length + 1;
    const hi = row.filter(([, l]) => l > ownLogit - 1e-3).length;
    assert.ok(own.rank >= lo && own.rank <= Math.max(lo, hi), `position ${i}: rank ${own.rank} not in [${lo}, ${hi}]`);
    for (const [id, l] of e.top) {
      const got = entry[String(id)];
      assert.ok(got, `position ${i}: top token ${id} missing`);
      assert.ok(Math.abs(got.logprob - (l - e.lse)) < 2e-3);
      assert.equal(typeof got.decoded_token, 'string');
    }
  }
});

test('echo with logprobs leads with the prompt tokens (first null)', { skip }, async () => {
  const prompt = ref.prompt_tokens;
  const k = 2;
  for (const stream of [false, true]) {
    let choice;
    if (!stream) {
      const r = await complete({ prompt, max_tokens: 3, temperature: 0, echo: true, logprobs: k });
      assert.equal(r.status, 200, JSON.stringify(r.json));
      choice = r.json.choices[0];
    } else {
      const resp = await fetch(`${server.url}/v1/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ prompt, max_tokens: 3, temperature: 0, echo: true, logprobs: k, stream: true }),
      });
      const text = await resp.text();
      choice = { text: '', logprobs: { tokens: [], token_logprobs: [], top_logprobs: [] } };
      for (const line of text.split('\n')) {
        if (!line.startsWith('data: ') || line === 'data: [DONE]') continue;
        const c = JSON.parse(line.slice(6)).choices[0];
        choice.text += c.text;
        if (c.logprobs) {
          choice.logprobs.tokens.push(...c.logprobs.tokens);
          choice.logprobs.token_logprobs.push(...c.logprobs.token_logprobs);
          choice.logprobs.top_logprobs.push(...c.logprobs.top_logprobs);
        }
      }
    }
    const lp = choice.logprobs;
    assert.equal(lp.tokens.length, prompt.length + 3, `stream=${stream}`);
    assert.equal(lp.token_logprobs[0], null);
    assert.equal(lp.top_logprobs[0], null);
    for (let i = 1; i < prompt.length; ++i) {
      const e = expected(i, k);
      assert.ok(Math.abs(lp.token_logprobs[i] - e.logprob) < 2e-3, `stream=${stream} position ${i}`);
      assert.equal(Object.keys(lp.top_logprobs[i]).length <= k, true);
    }
    // The generated tokens' logprobs follow, finite.
    for (let i = prompt.length; i < lp.tokens.length; ++i) assert.ok(lp.token_logprobs[i] <= 0);
    // The echoed text leads the choice's text.
    const echoed = lp.tokens.slice(0, prompt.length).join('');
    assert.ok(choice.text.length >= echoed.trim().length);
  }
});

test('greedy output is the same with and without prompt logprobs', { skip }, async () => {
  const prompt = ref.prompt_tokens;
  const a = await complete({ prompt, max_tokens: 6, temperature: 0 });
  const b = await complete({ prompt, max_tokens: 6, temperature: 0, prompt_logprobs: 1 });
  assert.equal(a.json.choices[0].text, b.json.choices[0].text);
});

test('suffix and bad prompt_logprobs are refused by name', { skip }, async () => {
  const s = await complete({ prompt: 'a', suffix: 'b', max_tokens: 1 });
  assert.equal(s.status, 400);
  assert.equal(s.json.error.param, 'suffix');
  for (const bad of [-1, 21, 'x', 1.5]) {
    const r = await complete({ prompt: 'a', prompt_logprobs: bad, max_tokens: 1 });
    assert.equal(r.status, 400, `prompt_logprobs ${JSON.stringify(bad)}`);
    assert.equal(r.json.error.param, 'prompt_logprobs');
  }
  const chat = await fetch(`${server.url}/v1/chat/completions`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ messages: [{ role: 'user', content: 'hi' }], prompt_logprobs: 1 }),
  });
  assert.equal(chat.status, 400);
  assert.equal((await chat.json()).error.param, 'prompt_logprobs');
});
