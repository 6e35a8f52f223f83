// /v1/rerank, /rerank and /v1/score with plain fetch (there is no official SDK) against
// `pagoda serve` on the BERT cross-encoder fixture (a Hugging Face BertForSequenceClassification
// directory written by tools/bert_fixture/make_bert_fixture.py, PAGODA_MODEL), whose float64
// PyTorch scores are in bert_reference.json next to it: every relevance_score / score equals the
// sigmoid of the oracle's classifier output, results are sorted and cut to top_n, documents come
// back when asked, and malformed bodies get OpenAI-shaped 400s naming the field.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { startServer, skipReason, MODEL } from './harness.mjs';

const skip = skipReason();
let server;
let ref;

before(async () => {
  if (skip) return;
  ref = JSON.parse(fs.readFileSync(path.join(path.dirname(MODEL), 'bert_reference.json'), 'utf8'));
  server = await startServer(['--max-num-seqs', '8']);
});

after(async () => {
  if (server) assert.equal((await server.stop()).code, 0, server.log());
});

const sigmoid = (x) => 1 / (1 + Math.exp(-x));

async function post(route, body) {
  const r = await fetch(`${server.url}${route}`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify(body),
  });
  return { status: r.status, body: await r.json() };
}

// The oracle's pairs grouped by query, in order.
function queries() {
  const byQuery = new Map();
  for (const p of ref.pairs) {
    if (!byQuery.has(p.query)) byQuery.set(p.query, []);
    byQuery.get(p.query).push(p);
  }
  return [...byQuery.entries()];
}

test('rerank scores match the float64 torch reference, sorted', { skip }, async () => {
  for (const route of ['/v1/rerank', '/rerank']) {
    for (const [query, pairs] of queries()) {
      const documents = pairs.map((p, i) => (i % 2 ? { text: p.document } : p.document));
      const r = await post(route, { model: path.basename(MODEL), query, documents });
      assert.equal(r.status, 200, JSON.stringify(r.body));
      assert.equal(r.body.results.length, pairs.length);
      assert.ok(r.body.usage.total_tokens > 0);
      const seen = new Set();
      for (let k = 0; k < r.body.results.length; ++k) {
        const res = r.body.results[k];
        seen.add(res.index);
        const want = sigmoid(pairs[res.index].score);
        assert.ok(Math.abs(res.relevance_score - want) < 1e-5, `${res.relevance_score} vs ${want}`);
        assert.equal(res.document.text, pairs[res.index].document);
        if (k > 0) assert.ok(r.body.results[k - 1].relevance_score >= res.relevance_score);
      }
      assert.equal(seen.size, pairs.length);
    }
  }
});

test('top_n and return_documents', { skip }, async () => {
  const [query, pairs] = queries()[0];
  const r = await post('/v1/rerank', {
    query, documents: pairs.map((p) => p.document), top_n: 1, return_documents: false,
  });
  assert.equal(r.status, 200, JSON.stringify(r.body));
  assert.equal(r.body.results.length, 1);
  assert.equal(r.body.results[0].document, undefined);
  const best = pairs.reduce((b, p, i) => (p.score > pairs[b].score ? i : b), 0);
  assert.equal(r.body.results[0].index, best);
});

test('score: one to many and many to many', { skip }, async () => {
  const [query, pairs] = queries()[0];
  const one = await post('/v1/score', { text_1: query, text_2: pairs.map((p) => p.document) });
  assert.equal(one.status, 200, JSON.stringify(one.body));
  assert.equal(one.body.object, 'list');
  assert.equal(one.body.data.length, pairs.length);
  one.body.data.forEach((d, i) => {
    assert.equal(d.index, i);
    assert.equal(d.object, 'score');
    assert.ok(Math.abs(d.score - sigmoid(pairs[i].score)) < 1e-5);
  });
  const all = ref.pairs;
  const many = await post('/v1/score', {
    text_1: all.map((p) => p.query), text_2: all.map((p) => p.document),
  });
  assert.equal(many.status, 200, JSON.stringify(many.body));
  many.body.data.forEach((d, i) => assert.ok(Math.abs(d.score - sigmoid(all[i].score)) < 1e-5));
});

test('malformed bodies: OpenAI-shaped 400s naming the field', { skip }, async () => {
  const cases = [
    ['/v1/rerank', { query: 'q', documents: ['a'], max_chunks_per_doc: 2 }, 'max_chunks_per_doc'],
    ['/v1/rerank', { query: 'q', documents: [] }, 'documents'],
    ['/v1/rerank', { query: 'q', documents: ['a', { txt: 'b' }] }, 'documents[1].txt'],
    ['/v1/rerank', { documents: ['a'] }, 'query'],
    ['/v1/rerank', { query: 'q', documents: ['a'], top_n: 'x' }, 'top_n'],
    ['/v1/score', { text_1: ['a', 'b'], text_2: ['c', 'd', 'e'] }, 'text_1'],
    ['/v1/score', { text_1: 'a' }, 'text_2'],
    ['/v1/embeddings', { input: 'a' }, 'model'], // a cross-encoder serves no embeddings
  ];
  for (const [route, body, param] of cases) {
    const r = await post(route, body);
    assert.equal(r.status, 400, `${route} ${JSON.stringify(body)}`);
    assert.equal(r.body.error.type, 'invalid_request_error');
    assert.equal(r.body.error.param, param);
    assert.equal(typeof r.body.error.message, 'string');
  }
});
