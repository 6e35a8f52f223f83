// The official OpenAI Node SDK's embeddings.create against `pagoda serve --pooling mean` on the
// bundled model: float and base64 encodings (explicit base64 decoded here from the published
// float32 little-endian layout; the SDK's own default path requests base64 and decodes it),
// string / array / token-id inputs, usage, unit norms, a batch equal to its items one by one,
// and the SDK's BadRequestError for fields the model does not allow (dimensions) or we do not
// support, with the param named.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import OpenAI from 'openai';
import { startServer, skipReason } from './harness.mjs';

const skip = skipReason();
let server;
let client;
let modelId;

before(async () => {
  if (skip) return;
  server = await startServer(['--max-num-seqs', '8', '--pooling', 'mean']);
  client = new OpenAI({ baseURL: `${server.url}/v1`, apiKey: 'unused', maxRetries: 0 });
  modelId = (await client.models.list()).data[0].id;
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

const norm = (v) => Math.sqrt(v.reduce((s, x) => s + x * x, 0));
const cosine = (a, b) => a.reduce((s, x, i) => s + x * b[i], 0) / (norm(a) * norm(b));

test('embeddings.create with float encoding', { skip }, async () => {
  const r = await client.embeddings.create({
    model: modelId, input: 'The cat sat on the mat.', encoding_format: 'float',
  });
  assert.equal(r.object, 'list');
  assert.equal(r.model, modelId);
  assert.equal(r.data.length, 1);
  const e = r.data[0];
  assert.equal(e.object, 'embedding');
  assert.equal(e.index, 0);
  assert.ok(Array.isArray(e.embedding) && e.embedding.length > 0);
  assert.ok(Math.abs(norm(e.embedding) - 1) < 1e-5);
  assert.ok(r.usage.prompt_tokens > 0);
  assert.equal(r.usage.total_tokens, r.usage.prompt_tokens);
});

test('base64 encoding carries the same float32 values', { skip }, async () => {
  const input = ['Once upon a time', 'def fibonacci(n):'];
  const f = await client.embeddings.create({ model: modelId, input, encoding_format: 'float' });
  const b = await client.embeddings.create({ model: modelId, input, encoding_format: 'base64' });
  const byDefault = await client.embeddings.create({ model: modelId, input }); // SDK: base64
  assert.equal(b.data.length, 2);
  for (let i = 0; i < 2; ++i) {
    assert.equal(typeof b.data[i].embedding, 'string');
    const buf = Buffer.from(b.data[i].embedding, 'base64');
    const floats = [];
    for (let k = 0; k < buf.length; k += 4) floats.push(buf.readFloatLE(k));
    assert.deepEqual(floats, f.data[i].embedding.map((x) => Math.fround(x)));
    assert.deepEqual(Array.from(byDefault.data[i].embedding), floats);
  }
  assert.ok(cosine(f.data[0].embedding, f.data[1].embedding) < 0.9999);
});

test('a batch equals its items one by one, token ids equal their text', { skip }, async () => {
  const texts = ['red apple', 'green pear', 'a long sentence about the weather today'];
  const batch = await client.embeddings.create({ model: modelId, input: texts, encoding_format: 'float' });
  assert.deepEqual(batch.data.map((d) => d.index), [0, 1, 2]);
  let total = 0;
  for (let i = 0; i < texts.length; ++i) {
    const one = await client.embeddings.create({ model: modelId, input: texts[i], encoding_format: 'float' });
    assert.ok(cosine(one.data[0].embedding, batch.data[i].embedding) > 0.99999);
    total += one.usage.prompt_tokens;
  }
  assert.equal(batch.usage.prompt_tokens, total);
  const tok = await (await fetch(`${server.url}/tokenize`, {
    method: 'POST', headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ prompt: texts[0] }),
  })).json();
  const ids = await client.embeddings.create({ model: modelId, input: tok.tokens, encoding_format: 'float' });
  const nested = await client.embeddings.create({ model: modelId, input: [tok.tokens], encoding_format: 'float' });
  assert.ok(cosine(ids.data[0].embedding, batch.data[0].embedding) > 0.99999);
  assert.ok(cosine(nested.data[0].embedding, batch.data[0].embedding) > 0.99999);
});

test('errors are OpenAI-shaped and name the field', { skip }, async () => {
  const expect400 = async (body, param) => {
    await assert.rejects(client.embeddings.create({ model: modelId, ...body }), (e) => {
      assert.ok(e instanceof OpenAI.BadRequestError, String(e));
      assert.equal(e.status, 400);
      assert.equal(e.param, param);
      return true;
    });
  };
  await expect400({ input: 'x', dimensions: 3 }, 'dimensions');
  await expect400({ input: 'x', encoding_format: 'int8' }, 'encoding_format');
  await expect400({ input: '' }, 'input');
  await expect400({ input: [] }, 'input');
  await expect400({ input: [1, -2] }, 'input');
  await expect400({ input: 'x', truncate: true }, 'truncate');
  await assert.rejects(client.embeddings.create({ model: 'nope', input: 'x' }),
    (e) => e instanceof OpenAI.NotFoundError);
});
