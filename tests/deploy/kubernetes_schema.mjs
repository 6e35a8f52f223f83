// Strict, offline validation of Kubernetes objects against the Kubernetes API schema.
//
// kubernetes-models (npm) ships one ajv validator per API type, generated from the Kubernetes
// OpenAPI spec: types, formats, enums, required fields. Like the API server (and unlike
// kubectl's strict mode) those validators accept fields the schema does not define, so a typo'd
// field would pass. We make them strict without a second schema: the object is handed to the
// validator through a Proxy that records which properties the validator reads. A generated
// validator reads exactly the properties its schema defines (and enumerates the keys of maps
// such as labels), so a key of a non-map object that was never read is a field the schema does
// not know: an error, named by its path.
import fs from "node:fs/promises";
import { createRequire } from "node:module";
import path from "node:path";

const require = createRequire(import.meta.url);
const modelsRoot = path.dirname(require.resolve("kubernetes-models/package.json"));

// Wraps `value` so that every read of a property is recorded in `seen` (one record per object).
function track(value, where, seen) {
  if (value === null || typeof value !== "object") return value;
  const record = { where, object: value, read: new Set(), enumerated: false };
  seen.push(record);
  const children = new Map();
  return new Proxy(value, {
    get(target, key, receiver) {
      const child = Reflect.get(target, key, receiver);
      if (typeof key !== "string") return child;
      record.read.add(key);
      if (child === null || typeof child !== "object") return child;
      if (!children.has(key)) {
        const sub = Array.isArray(target) ? `${where}[${key}]` : `${where}.${key}`;
        children.set(key, track(child, sub, seen));
      }
      return children.get(key);
    },
    has(target, key) {
      if (typeof key === "string") record.read.add(key);
      return Reflect.has(target, key);
    },
    ownKeys(target) {
      record.enumerated = true;
      return Reflect.ownKeys(target);
    },
  });
}

const validators = new Map();

// The generated validator for apiVersion/kind, or null when kubernetes-models has none. The
// model file kubernetes-models/<group>/<version>/<Kind>.js ("v1" is the core group) imports its
// schema's validator from _schemas/; we load that validator directly.
export async function validatorFor(apiVersion, kind) {
  if (typeof apiVersion !== "string" || typeof kind !== "string") return null;
  if (!/^([a-z0-9.-]+\/)?v[0-9]+((alpha|beta)[0-9]+)?$/.test(apiVersion)) return null;
  if (!/^[A-Z][A-Za-z0-9]*$/.test(kind)) return null;
  const key = `${apiVersion}/${kind}`;
  if (!validators.has(key)) {
    let validate = null;
    try {
      const model = await fs.readFile(path.join(modelsRoot, apiVersion, `${kind}.js`), "utf8");
      const schema = model.match(/_schemas\/([A-Za-z0-9]+)\.js/);
      if (schema) {
        validate = (await import(path.join(modelsRoot, "_schemas", `${schema[1]}.js`))).validate;
      }
    } catch (e) {
      if (e.code !== "ENOENT") throw e;
    }
    validators.set(key, validate);
  }
  return validators.get(key);
}

// Validates one object. Returns a list of messages (empty: valid). `partial` (a kustomize
// patch) skips missing-required-field errors but keeps every type and unknown-field check.
export async function validateObject(object, { partial = false } = {}) {
  if (object === null || typeof object !== "object" || Array.isArray(object)) {
    return ["not a mapping"];
  }
  const { apiVersion, kind } = object;
  const validate = await validatorFor(apiVersion, kind);
  if (!validate) return [`no Kubernetes schema for apiVersion ${apiVersion} kind ${kind}`];
  const seen = [];
  validate(track(object, "", seen));
  const messages = [];
  for (const e of validate.errors ?? []) {
    if (partial && e.keyword === "required") continue;
    const at = e.instancePath.replace(/\//g, ".") || ".";
    messages.push(`${at}: ${e.keyword} ${JSON.stringify(e.params)}`);
  }
  for (const record of seen) {
    if (Array.isArray(record.object) || record.enumerated) continue;
    for (const key of Object.keys(record.object)) {
      if (!record.read.has(key)) messages.push(`${record.where}.${key}: unknown field`);
    }
  }
  return messages;
}
