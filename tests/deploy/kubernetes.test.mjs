// deploy/kubernetes, offline: every manifest is valid against the Kubernetes API schema (strict:
// unknown fields fail, see kubernetes_schema.mjs), every kustomization's files exist and every
// YAML file is reachable from one, and the objects agree with each other and with `pagoda
// serve` (probes, drain timing, sizing formula, selectors, the HPA's adapter metric). Mutated
// copies show that a typo'd field or a wrong type fails.
import assert from "node:assert/strict";
import { execFileSync } from "node:child_process";
import fs from "node:fs";
import os from "node:os";
import path from "node:path";
import { test } from "node:test";
import { fileURLToPath } from "node:url";
import YAML from "yaml";

import { BIN, skipReason, startServer } from "../server/js/harness.mjs";
import { validateObject } from "./kubernetes_schema.mjs";

const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), "../..");
const k8sDir = path.join(root, "deploy/kubernetes");
// YAML files that are configuration for a program rather than Kubernetes objects, each checked
// by a test below.
const configFiles = new Set(["prometheus-adapter/config.yaml"]);

function yamlFiles(dir) {
  const out = [];
  for (const entry of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, entry.name);
    if (entry.isDirectory()) out.push(...yamlFiles(p));
    else if (/\.ya?ml$/.test(entry.name)) out.push(p);
  }
  return out.sort();
}

// Parses every document of a file; YAML errors (duplicate keys included) throw.
function parseAll(file) {
  const docs = YAML.parseAllDocuments(fs.readFileSync(file, "utf8"), { uniqueKeys: true });
  const objects = [];
  for (const doc of docs) {
    if (doc.errors.length > 0) throw new Error(`${file}: ${doc.errors[0].message}`);
    const value = doc.toJS();
    if (value !== null) objects.push(value);
  }
  return objects;
}

const rel = (file) => path.relative(k8sDir, file);
const isKustomization = (o) => o.kind === "Kustomization";

// Every kustomization with the files it names (resources that are directories are kustomizations
// themselves), and its patch files (validated as partial objects).
const kustomizationKeys = new Set([
  "apiVersion", "kind", "namespace", "labels", "resources", "patches", "images",
  "configMapGenerator", "generatorOptions", "commonAnnotations",
]);
function readKustomizations() {
  const result = [];
  for (const file of yamlFiles(k8sDir).filter((f) => path.basename(f) === "kustomization.yaml")) {
    const [k] = parseAll(file);
    const dir = path.dirname(file);
    const files = [];
    const patches = [];
    for (const r of k.resources ?? []) {
      const p = path.resolve(dir, r);
      if (fs.existsSync(p) && fs.statSync(p).isDirectory()) {
        assert.ok(fs.existsSync(path.join(p, "kustomization.yaml")), `${rel(file)}: ${r}`);
      } else {
        files.push(p);
      }
    }
    for (const patch of k.patches ?? []) {
      if (patch.path) patches.push(path.resolve(dir, patch.path));
    }
    for (const gen of k.configMapGenerator ?? []) {
      for (const f of gen.files ?? []) files.push(path.resolve(dir, f.replace(/^[^=]*=/, "")));
    }
    result.push({ file, k, files, patches });
  }
  return result;
}

test("every YAML file parses and is a Kubernetes object, a kustomization or a known config", () => {
  const files = yamlFiles(k8sDir);
  assert.ok(files.length >= 10, `only ${files.length} YAML files under deploy/kubernetes`);
  for (const file of files) {
    const objects = parseAll(file);
    assert.ok(objects.length > 0, `${rel(file)}: empty`);
    if (configFiles.has(rel(file))) continue;
    for (const o of objects) {
      assert.equal(typeof o.apiVersion, "string", `${rel(file)}: no apiVersion`);
      assert.equal(typeof o.kind, "string", `${rel(file)}: no kind`);
    }
  }
});

test("kustomizations: known keys, every named file exists, every YAML file is used", () => {
  const used = new Set();
  for (const { file, k, files, patches } of readKustomizations()) {
    used.add(file);
    for (const key of Object.keys(k)) {
      assert.ok(kustomizationKeys.has(key), `${rel(file)}: unexpected key ${key}`);
    }
    for (const f of [...files, ...patches]) {
      assert.ok(fs.existsSync(f), `${rel(file)} names ${rel(f)}, which does not exist`);
      used.add(f);
    }
  }
  for (const file of yamlFiles(k8sDir)) {
    assert.ok(used.has(file), `${rel(file)} is in no kustomization`);
  }
});

test("every object is valid against the Kubernetes API schema (strict)", async () => {
  const patches = new Set(readKustomizations().flatMap((k) => k.patches));
  let count = 0;
  for (const file of yamlFiles(k8sDir)) {
    if (configFiles.has(rel(file))) continue;
    for (const o of parseAll(file)) {
      if (isKustomization(o)) continue;
      const errors = await validateObject(o, { partial: patches.has(file) });
      assert.deepEqual(errors, [], `${rel(file)} ${o.kind}/${o.metadata?.name}`);
      count++;
    }
  }
  assert.ok(count >= 10, `only ${count} objects validated`);
});

// The base's objects by kind and name.
function baseObjects() {
  const byKey = new Map();
  for (const file of yamlFiles(path.join(k8sDir, "base"))) {
    for (const o of parseAll(file)) {
      if (!isKustomization(o)) byKey.set(`${o.kind}/${o.metadata.name}`, o);
    }
  }
  return byKey;
}
const get = (objects, key) => {
  assert.ok(objects.has(key), `base has no ${key}`);
  return objects.get(key);
};

test("mutated copies fail: typo'd fields and wrong types, at any depth, in a file", async () => {
  const deployment = get(baseObjects(), "Deployment/pagoda-serve");
  const container = (d) => d.spec.template.spec.containers[0];
  const mutations = [
    ["typo at the top of spec", (d) => { d.spec.replicass = 2; }, /\.spec\.replicass: unknown/],
    ["typo in a probe", (d) => { container(d).readinessProbe.httpGet.paht = "/health"; },
      /readinessProbe\.httpGet\.paht: unknown field/],
    ["typo in the pod spec", (d) => {
      d.spec.template.spec.terminationGracePeriodSecond = 150;
    }, /terminationGracePeriodSecond: unknown field/],
    ["string port", (d) => { container(d).ports[0].containerPort = "8000"; },
      /containerPort: type/],
    ["string replicas", (d) => { d.spec.replicas = "2"; }, /\.spec\.replicas: type/],
    ["bad quantity", (d) => { container(d).resources.limits.memory = "15 gigs"; },
      /limits\.memory: format/],
    ["list where a map is expected", (d) => { d.metadata.labels = ["a"]; },
      /\.metadata\.labels: type/],
    ["missing required field", (d) => { delete container(d).name; }, /required/],
  ];
  assert.deepEqual(await validateObject(deployment), []);
  for (const [name, mutate, expected] of mutations) {
    const copy = structuredClone(deployment);
    mutate(copy);
    const errors = await validateObject(copy);
    assert.ok(errors.some((e) => expected.test(e)), `${name}: ${JSON.stringify(errors)}`);
  }
  // End to end: a one-character typo in the YAML text of a copy of the file.
  const text = fs.readFileSync(path.join(k8sDir, "base/serve-deployment.yaml"), "utf8");
  const typo = text.replace("readOnlyRootFilesystem: true", "readOnlyRootFileSystem: true");
  assert.notEqual(typo, text);
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pagoda-k8s-"));
  try {
    fs.writeFileSync(path.join(dir, "serve-deployment.yaml"), typo);
    const [o] = parseAll(path.join(dir, "serve-deployment.yaml"));
    const errors = await validateObject(o);
    assert.ok(errors.some((e) => /securityContext\.readOnlyRootFileSystem: unknown/.test(e)),
              JSON.stringify(errors));
  } finally {
    fs.rmSync(dir, { recursive: true });
  }
  // An apiVersion/kind pair that does not exist is refused, not skipped.
  assert.match((await validateObject({ ...deployment, apiVersion: "apps/v2" }))[0], /no Kubernetes/);
});

// Kubernetes quantities in bytes (memory) or cores (cpu).
function quantity(q) {
  const m = String(q).match(/^([0-9.]+)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/);
  assert.ok(m, `quantity ${q}`);
  const scale = { m: 1e-3, k: 1e3, M: 1e6, G: 1e9, T: 1e12, Ki: 2 ** 10, Mi: 2 ** 20, Gi: 2 ** 30,
                  Ti: 2 ** 40 };
  return Number(m[1]) * (m[2] ? scale[m[2]] : 1);
}
// A `pagoda serve` size ("8GiB", "512MiB", "1.5GB"; cli/commands/serve.cc parse_size) in bytes.
function pagodaSize(text) {
  const m = String(text).match(/^([0-9.]+)([kmgt]i?)?b?$/i);
  assert.ok(m, `size ${text}`);
  if (!m[2]) return Number(m[1]);
  const power = "kmgt".indexOf(m[2][0].toLowerCase()) + 1;
  return Number(m[1]) * (m[2].length === 2 ? 1024 ** power : 1000 ** power);
}
// `--name=value` from a container's args.
function arg(container, name) {
  const hit = container.args.find((a) => a.startsWith(`--${name}=`));
  return hit === undefined ? undefined : hit.slice(name.length + 3);
}
function probePath(probe, container) {
  assert.ok(probe?.httpGet, "an httpGet probe");
  const port = container.ports.find((p) => p.name === probe.httpGet.port);
  assert.ok(port, `probe port ${probe.httpGet.port} is a named container port`);
  return probe.httpGet.path;
}

test("serve Deployment: probes on /health, drain fits the grace period, locked down", () => {
  const d = get(baseObjects(), "Deployment/pagoda-serve");
  const pod = d.spec.template.spec;
  const c = pod.containers[0];
  assert.equal(c.args[0], "serve");
  for (const p of ["startupProbe", "readinessProbe", "livenessProbe"]) {
    assert.equal(probePath(c[p], c), "/health", p);
  }
  // The startup probe allows for loading (liveness would restart a pod still loading).
  assert.ok(c.startupProbe.periodSeconds * c.startupProbe.failureThreshold >= 300);
  const drain = Number(arg(c, "drain-timeout"));
  const preStop = c.lifecycle?.preStop?.sleep?.seconds ?? 0;
  assert.ok(drain > 0, "--drain-timeout is set");
  assert.ok(pod.terminationGracePeriodSeconds > drain + preStop,
            `grace ${pod.terminationGracePeriodSeconds} <= drain ${drain} + preStop ${preStop}`);
  assert.equal(pod.securityContext.runAsNonRoot, true);
  assert.equal(c.securityContext.readOnlyRootFilesystem, true);
  assert.equal(c.securityContext.allowPrivilegeEscalation, false);
  assert.deepEqual(c.securityContext.capabilities.drop, ["ALL"]);
  // --port matches the container port the probes and Services use.
  assert.equal(Number(arg(c, "port")), c.ports.find((p) => p.name === "http").containerPort);
  const models = pod.volumes.find((v) => v.name === "models");
  assert.ok(models.persistentVolumeClaim.readOnly);
  assert.ok(arg(c, "model").startsWith(c.volumeMounts.find((m) => m.name === "models").mountPath));
});

test("serve Deployment: resources follow the sizing formula of deploy/README.md", () => {
  const d = get(baseObjects(), "Deployment/pagoda-serve");
  const c = d.spec.template.spec.containers[0];
  const modelBytes = Number(d.metadata.annotations["pagoda.dev/model-bytes"]);
  const kvBytes = Number(d.metadata.annotations["pagoda.dev/kv-cache-bytes"]);
  assert.ok(modelBytes > 0 && kvBytes > 0);
  assert.equal(pagodaSize(arg(c, "kv-cache-memory")), kvBytes, "--kv-cache-memory vs annotation");
  const GiB = 2 ** 30;
  const memory = Math.ceil(((modelBytes + kvBytes) * 1.1 + GiB) / GiB) * GiB;
  assert.equal(quantity(c.resources.requests.memory), memory, "memory request");
  assert.equal(quantity(c.resources.limits.memory), memory, "memory limit == request");
  assert.equal(quantity(c.resources.requests.cpu), Number(arg(c, "threads")), "cpu == --threads");
  assert.equal(quantity(c.resources.limits.cpu), quantity(c.resources.requests.cpu));
});

test("Services, PDBs and the HPA select what exists; the HPA metric is the adapter's", () => {
  const objects = baseObjects();
  const deployments = [...objects.values()].filter((o) => o.kind === "Deployment");
  const matches = (selector, d) => Object.entries(selector).every(
      ([k, v]) => d.spec.template.metadata.labels[k] === v);
  for (const o of objects.values()) {
    if (o.kind === "Service") {
      const d = deployments.find((dep) => matches(o.spec.selector, dep));
      assert.ok(d, `Service ${o.metadata.name} selects no Deployment`);
      const names = d.spec.template.spec.containers.flatMap((c) => c.ports.map((p) => p.name));
      for (const p of o.spec.ports) assert.ok(names.includes(p.targetPort), p.targetPort);
    }
    if (o.kind === "PodDisruptionBudget") {
      assert.ok(deployments.some((dep) => matches(o.spec.selector.matchLabels, dep)),
                `PDB ${o.metadata.name} selects no Deployment`);
    }
  }
  const hpa = get(objects, "HorizontalPodAutoscaler/pagoda-serve");
  const target = get(objects, `Deployment/${hpa.spec.scaleTargetRef.name}`);
  assert.equal(target.spec.template.spec.containers[0].args[0], "serve");
  assert.ok(hpa.spec.minReplicas >= 2, "at least two replicas");
  // Each `kubectl apply` would reset a replica count in the Deployment, fighting the HPA.
  assert.equal(target.spec.replicas, undefined, "the HPA's Deployment sets no replicas");
  const [metric] = hpa.spec.metrics;
  const [adapter] = parseAll(path.join(k8sDir, "prometheus-adapter/config.yaml"));
  const rule = adapter.rules.find((r) => r.name.as === metric.pods.metric.name);
  assert.ok(rule, `no adapter rule exposes ${metric.pods.metric.name}`);
  const series = rule.seriesQuery.match(/^[a-zA-Z_:][a-zA-Z0-9_:]*/)[0];
  assert.equal(series, "vllm:num_requests_waiting");
  assert.match(series, new RegExp(rule.name.matches));
  assert.match(rule.metricsQuery, /<<\.Series>>\{<<\.LabelMatchers>>\}/);
});

test("router: its config parses and names the serve replicas' Service", () => {
  const objects = baseObjects();
  const router = get(objects, "Deployment/pagoda-router");
  const c = router.spec.template.spec.containers[0];
  assert.equal(c.args[0], "router");
  for (const p of ["readinessProbe", "livenessProbe"]) assert.equal(probePath(c[p], c), "/health");
  const configPath = arg(c, "config");
  const mount = c.volumeMounts.find((m) => configPath.startsWith(`${m.mountPath}/`));
  assert.ok(mount, `--config ${configPath} is on no mounted volume`);
  const volume = router.spec.template.spec.volumes.find((v) => v.name === mount.name);
  const cm = get(objects, `ConfigMap/${volume.configMap.name}`);
  const key = configPath.slice(mount.mountPath.length + 1);
  assert.ok(cm.data[key], `ConfigMap ${cm.metadata.name} has no ${key}`);
  const config = YAML.parse(cm.data[key], { uniqueKeys: true });
  assert.equal(config.listen.port, c.ports.find((p) => p.name === "http").containerPort);
  const serve = get(objects, "Deployment/pagoda-serve").spec.template.spec.containers[0];
  assert.ok(config.backends.length > 0);
  for (const backend of config.backends) {
    const url = new URL(backend.url);
    const svc = get(objects, `Service/${url.hostname}`);
    assert.equal(Number(url.port), svc.spec.ports[0].port);
    assert.ok(backend.models.includes(arg(serve, "served-model-name")));
  }
});

// kustomize itself (kubectl's built-in copy) is not a Debian or npm package: where it is
// installed, the built overlays are validated too.
function findKubectl() {
  try {
    execFileSync("kubectl", ["version", "--client"], { stdio: "ignore" });
    return true;
  } catch {
    return false;
  }
}
test("kustomize build output is valid too (when kubectl is installed)",
     { skip: findKubectl() ? false : "kubectl not installed" }, async () => {
  for (const { file } of readKustomizations()) {
    const out = execFileSync("kubectl", ["kustomize", path.dirname(file)], { encoding: "utf8" });
    const objects = YAML.parseAllDocuments(out).map((d) => d.toJS());
    assert.ok(objects.length > 0);
    for (const o of objects) {
      assert.deepEqual(await validateObject(o), [], `${rel(file)}: ${o.kind}/${o.metadata.name}`);
    }
  }
});

// The serve container's command line, run for real on the bundled model: every flag exists and
// the values parse. The harness supplies the model, address and threads; the KV cache is
// shrunk. Then SIGTERM: the replica drains and exits within --drain-timeout, as the grace
// period assumes.
test("the serve container's args start a real pagoda serve, which drains on SIGTERM",
     { skip: skipReason() }, async () => {
  const c = get(baseObjects(), "Deployment/pagoda-serve").spec.template.spec.containers[0];
  assert.deepEqual(c.command, ["pagoda"]);
  const replaced = ["model", "host", "port", "threads", "kv-cache-memory"];
  const args = c.args.slice(1).filter((a) => !replaced.some((r) => a.startsWith(`--${r}=`)));
  assert.equal(args.length, c.args.length - 1 - replaced.length);
  const server = await startServer([...args, "--kv-cache-memory=64MiB"]);
  try {
    const health = await fetch(`${server.url}/health`, { headers: { Host: "pagoda-serve:8000" } });
    assert.equal(health.status, 200, "a Service name as Host is answered");
    const models = await (await fetch(`${server.url}/v1/models`)).json();
    assert.equal(models.data[0].id, arg(c, "served-model-name"));
  } finally {
    const started = Date.now();
    const { code } = await server.stop("SIGTERM");
    assert.equal(code, 0, server.log());
    assert.ok(Date.now() - started < Number(arg(c, "drain-timeout")) * 1000);
  }
});

// `pagoda router` is issue 35 part 1; once the binary has it, its flags are checked too.
const hasRouter = BIN && fs.existsSync(BIN) &&
                  /^\s+router\s/m.test(execFileSync(BIN, ["--help"], { encoding: "utf8" }));
test("the router container's args are flags of pagoda router",
     { skip: hasRouter ? false : "pagoda router is not built yet (issue 35 part 1)" }, () => {
  const c = get(baseObjects(), "Deployment/pagoda-router").spec.template.spec.containers[0];
  const help = execFileSync(BIN, ["router", "--help"], { encoding: "utf8" });
  for (const a of c.args.slice(1)) {
    const flag = a.match(/^(--[a-z-]+)=/)[1];
    assert.match(help, new RegExp(`${flag}\\b`), `pagoda router has no ${flag}`);
  }
});

// The router ConfigMap's router.yaml is a config `pagoda router` accepts (its own validator:
// unknown keys and out-of-range values are refused by name).
test("the router ConfigMap holds a config pagoda router accepts",
     { skip: hasRouter ? false : "pagoda router is not built" }, () => {
  const cm = get(baseObjects(), "ConfigMap/pagoda-router");
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), "pagoda-router-cfg-"));
  try {
    const file = path.join(dir, "router.yaml");
    fs.writeFileSync(file, cm.data["router.yaml"]);
    execFileSync(BIN, ["router", "--config", file, "--check"], { encoding: "utf8" });
    // A typo'd key must be refused: the check is not a no-op.
    fs.writeFileSync(file, cm.data["router.yaml"].replace("load_factor:", "load_factr:"));
    assert.throws(() => execFileSync(BIN, ["router", "--config", file, "--check"],
                                     { encoding: "utf8", stdio: "pipe" }));
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});
