// Prefix affinity vs round robin on 3 replicas: 4 tenants with distinct long system prompts, 3
// requests each, interleaved. The cluster prefix-cache hit rate is read from the replicas' own
// vllm:prefix_cache_{hits,queries}_total. Round robin first, sent by the test itself to replica
// i mod 3 (a tenant's 3 requests land on 3 replicas: none can hit); then the same schedule for a
// second set of tenants (distinct prompts, so the first phase's cache cannot help) through
// `pagoda router` with prefix affinity, which must send each tenant's requests to one replica
// (checked with x-pagoda-backend; 2 of 3 hit). The test asks for at least 2x, and at least 0.5.
//
// Flakiness fixed (server_js_router_affinity failed once under ctest -j2): the round-robin phase
// went through the router with affinity off, whose least-outstanding choice weighs the replicas'
// scraped KV usage and waiting counts. Under load those scrapes land mid-request and stay stale
// for an interval, and a /health check over the default 1 s timeout ejects a replica
// (failures_to_eject 1), so the "round robin" could send a tenant back to a replica it had
// warmed, and an ejection remaps the affinity phase. The baseline is now a strict round robin,
// the health timeout is generous (a check that waits is not a failure here), and the affinity
// phase's placements are asserted rather than assumed. The SIGHUP reload (and its sleep) is no
// longer needed; router.test.mjs covers SIGHUP.
import { test, before, after } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { BIN, skipReason, startServer, waitHealthy, metrics } from './harness.mjs';

const skip = skipReason();
const replicas = [];
let router;
let configPath;

function sumMetric(values, name) {
  let s = 0;
  for (const [k, v] of values) if (k === name || k.startsWith(`${name}{`)) s += v;
  return s;
}

async function clusterPrefixCounts() {
  let hits = 0;
  let queries = 0;
  for (const r of replicas) {
    const m = await metrics(r.url);
    hits += sumMetric(m, 'vllm:prefix_cache_hits_total');
    queries += sumMetric(m, 'vllm:prefix_cache_queries_total');
  }
  return { hits, queries };
}

function systemPrompt(tenant) {
  const words = [];
  for (let i = 0; i < 22; ++i) words.push(`Rule ${i} of ${tenant}: answer briefly.`);
  return words.join(' ');
}

// Runs 3 rounds over `tenants`; request i goes to urlOf(i). Returns the cluster hit rate and, per
// tenant, the backends that answered (x-pagoda-backend; null when not through the router).
async function runPhase(tenants, urlOf) {
  const before = await clusterPrefixCounts();
  const placements = new Map(tenants.map((t) => [t, []]));
  let i = 0;
  for (let round = 0; round < 3; ++round) {
    for (const t of tenants) {
      const r = await fetch(`${urlOf(i++)}/v1/chat/completions`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({
          model: 'demo', max_tokens: 2, temperature: 0,
          messages: [{ role: 'system', content: systemPrompt(t) },
                     { role: 'user', content: `Question ${round}` }],
        }),
      });
      const body = await r.json();
      assert.equal(r.status, 200, JSON.stringify(body));
      placements.get(t).push(r.headers.get('x-pagoda-backend'));
      assert.ok(body.usage.prompt_tokens < 480, `prompt too long: ${body.usage.prompt_tokens}`);
    }
  }
  const afterCounts = await clusterPrefixCounts();
  const queries = afterCounts.queries - before.queries;
  assert.ok(queries > 0, 'the replicas report prefix-cache queries');
  return { rate: (afterCounts.hits - before.hits) / queries, placements };
}

function config() {
  return `listen: {host: 127.0.0.1, port: 0}
backends:
${replicas.map((s, i) => `  - {name: r${i}, url: "${s.url}", models: [demo]}`).join('\n')}
health: {interval_ms: 200, timeout_ms: 30000}
balancing: {prefix_affinity: true}
`;
}

before(async () => {
  if (skip) return;
  for (let i = 0; i < 3; ++i) replicas.push(await startServer([], { threads: 1 }));
  configPath = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'pagoda-router-')), 'router.yaml');
  fs.writeFileSync(configPath, config());
  const proc = spawn(BIN, ['router', '--config', configPath, '--threads', '1'], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const url = await new Promise((resolve, reject) => {
    let out = '';
    proc.stdout.on('data', (d) => {
      out += d.toString();
      const m = out.match(/listening on port (\d+)/);
      if (m) resolve(`http://127.0.0.1:${m[1]}`);
    });
    proc.on('exit', (code) => reject(new Error(`router exited (${code})`)));
  });
  router = { proc, url };
  await waitHealthy(url, 10000);
});

after(async () => {
  for (const s of replicas) await s.stop('SIGKILL');
  if (router) {
    router.proc.kill('SIGTERM');
    await new Promise((r) => router.proc.on('exit', r));
  }
});

test('prefix affinity at least doubles the cluster prefix-cache hit rate of round robin', { skip }, async () => {
  const { rate: roundRobin } = await runPhase(['alpha', 'bravo', 'charlie', 'delta'],
                                              (i) => replicas[i % replicas.length].url);
  const { rate: affinity, placements } = await runPhase(['echo', 'foxtrot', 'golf', 'hotel'],
                                                        () => router.url);
  for (const [t, backends] of placements) {
    assert.equal(new Set(backends).size, 1, `tenant ${t} went to ${backends.join(', ')}`);
  }
  const h = await (await fetch(`${router.url}/health`)).json();
  assert.equal(h.backends_up, 3, JSON.stringify(h));
  console.log(`cluster prefix-cache hit rate: round robin ${roundRobin.toFixed(3)}, affinity ${affinity.toFixed(3)}`);
  assert.ok(affinity >= 2 * roundRobin, `affinity ${affinity} vs round robin ${roundRobin}`);
  assert.ok(affinity >= 0.5, `affinity hit rate ${affinity}`);
});
