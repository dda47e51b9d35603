/**
 * Renders each Kustomize overlay of deploy/k8s and checks what `kubectl apply -k` would send:
 * every object against the Kubernetes API schema of its kind, then the promises of
 * deploy/k8s/README.md (non-root pods with probes, secrets only by reference, the network flows,
 * no sandbox in production) and of the Dockerfiles the manifests run.
 *
 * No kustomize binary is at hand, so a small renderer here implements the kustomization fields
 * this repository uses, and refuses every other field: a new field fails this test until it is
 * modelled here.
 */
import assert from 'node:assert/strict';
import { createHash } from 'node:crypto';
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  statSync,
  writeFileSync,
} from 'node:fs';
import { tmpdir } from 'node:os';
import { join, relative, resolve } from 'node:path';
import { describe, it } from 'node:test';
import { fileURLToPath } from 'node:url';
import { IMAGE_PORT, serviceEnv } from '@adsmcp/testkit/image-env';
import type { ServiceName, StackSecrets } from '@adsmcp/testkit/stack';
import { Deployment, type IDeployment } from 'kubernetes-models/apps/v1/Deployment';
import {
  HorizontalPodAutoscaler,
  type IHorizontalPodAutoscaler,
} from 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler';
import { type INetworkPolicy, NetworkPolicy } from 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy';
import {
  type IPodDisruptionBudget,
  PodDisruptionBudget,
} from 'kubernetes-models/policy/v1/PodDisruptionBudget';
import { ConfigMap, type IConfigMap } from 'kubernetes-models/v1/ConfigMap';
import type { IContainer } from 'kubernetes-models/v1/Container';
import { type INamespace, Namespace } from 'kubernetes-models/v1/Namespace';
import { type IService, Service } from 'kubernetes-models/v1/Service';
import { type IServiceAccount, ServiceAccount } from 'kubernetes-models/v1/ServiceAccount';
import ts from 'typescript';
import { parseAllDocuments, stringify } from 'yaml';

const ROOT = fileURLToPath(new URL('../../../', import.meta.url));
const K8S = join(ROOT, 'deploy/k8s');
const rel = (path: string) => relative(ROOT, path) || '.';

// ---------------------------------------------------------------------------------------------
// What the manifests must say: the processes, their ports, probes and environment.

/** The uid of the `node` user in the node images; runAsUser and the Dockerfiles' USER. */
const NODE_UID = 1000;
const GRPC_PORT = 50051;
const GRPC_ENV = ['DATABASE_URL', 'PRINCIPAL_PUBLIC_KEY', 'PORT', 'HOST', 'LOG_LEVEL'];

interface ServiceExpectation {
  port: number;
  probes: { kind: 'grpc' } | { kind: 'http'; liveness: string; readiness: string };
  /**
   * Every variable the manifests must set: what the process's fail-fast config requires, and the
   * optional ones a deployment relies on (the optimizer's publishing key and the changes URL it
   * publishes through, the key the changes service verifies it with, KAFKA_BROKERS for the
   * processes whose bus reads it, empty for the PostgreSQL queue).
   */
  env: string[];
}

const SERVICES: Record<string, ServiceExpectation> = {
  gateway: {
    port: 8080,
    probes: { kind: 'http', liveness: '/healthz', readiness: '/readyz' },
    env: [
      'DATABASE_URL',
      'PRINCIPAL_PRIVATE_KEY',
      'PORT',
      'HOST',
      'PUBLIC_URL',
      'CHANGES_URL',
      'OPTIMIZER_URL',
      'MARKETING_URL',
      'UPSTREAM_PROXY_URL',
      'LOG_LEVEL',
    ],
  },
  changes: {
    port: GRPC_PORT,
    probes: { kind: 'grpc' },
    env: [
      ...GRPC_ENV,
      'CHANGES_PRIVATE_KEY',
      'UPSTREAM_PROXY_URL',
      'MARKETING_URL',
      'OPTIMIZER_PUBLIC_KEY',
      'MARKETING_PUBLIC_KEY',
      'KAFKA_BROKERS',
    ],
  },
  optimizer: {
    port: GRPC_PORT,
    probes: { kind: 'grpc' },
    env: [...GRPC_ENV, 'OPTIMIZER_PRIVATE_KEY', 'CHANGES_URL', 'MARKETING_URL', 'KAFKA_BROKERS'],
  },
  marketing: {
    port: GRPC_PORT,
    probes: { kind: 'grpc' },
    env: [
      ...GRPC_ENV,
      'CHANGES_PUBLIC_KEY',
      'OPTIMIZER_PUBLIC_KEY',
      'MARKETING_PRIVATE_KEY',
      'CHANGES_URL',
      'UPSTREAM_PROXY_URL',
    ],
  },
  'upstream-proxy': {
    port: GRPC_PORT,
    probes: { kind: 'grpc' },
    env: [
      ...GRPC_ENV,
      'UPSTREAM_URL',
      'UPSTREAM_CREDENTIAL_KEY',
      'CHANGES_PUBLIC_KEY',
      'OPTIMIZER_PUBLIC_KEY',
      'MARKETING_PUBLIC_KEY',
    ],
  },
  'ads-sandbox': {
    port: 8080,
    probes: { kind: 'http', liveness: '/healthz', readiness: '/healthz' },
    env: ['DATABASE_URL', 'PORT', 'HOST', 'SANDBOX_ADMIN_TOKEN'],
  },
};

/** Variables that hold a secret: they may come only from a Secret, by secretKeyRef. */
const SECRET_ENV = new Set([
  'DATABASE_URL',
  'PRINCIPAL_PRIVATE_KEY',
  'CHANGES_PRIVATE_KEY',
  'OPTIMIZER_PRIVATE_KEY',
  'MARKETING_PRIVATE_KEY',
  'UPSTREAM_CREDENTIAL_KEY',
  'SANDBOX_ADMIN_TOKEN',
]);
/** A name that looks secret is treated as one too, so a new variable cannot slip into a ConfigMap. */
const looksSecret = (name: string) =>
  SECRET_ENV.has(name) || /PRIVATE|SECRET|TOKEN|PASSWORD|CREDENTIAL/.test(name);

/** In-namespace flows the network policies allow, as `from->to:port`; every other one is denied. */
const FLOWS = [
  'outside->gateway:8080',
  'gateway->changes:50051',
  'gateway->optimizer:50051',
  'gateway->marketing:50051',
  'gateway->upstream-proxy:50051',
  'changes->upstream-proxy:50051',
  'optimizer->upstream-proxy:50051',
  'marketing->upstream-proxy:50051',
  'optimizer->changes:50051',
  'marketing->changes:50051',
];

/** The pods that may open connections to public addresses (on 443 only): the ad platform, and the web pages marketing reads. */
const INTERNET_EGRESS = ['upstream-proxy', 'marketing'];

/** The processes whose bus is chosen by KAFKA_BROKERS; the others' buses are the PostgreSQL queue. */
const KAFKA_READERS = ['changes', 'marketing', 'optimizer'];

/** Destinations outside the cluster's pods, and which pods may reach each ('*' is every pod). */
const EGRESS: { ip: string; port: number; protocol: 'TCP' | 'UDP'; who: string[] | '*' }[] = [
  { ip: '10.96.0.10', port: 53, protocol: 'UDP', who: '*' },
  { ip: '10.96.0.10', port: 53, protocol: 'TCP', who: '*' },
  { ip: '10.20.0.5', port: 5432, protocol: 'TCP', who: '*' },
  { ip: '10.20.0.6', port: 9092, protocol: 'TCP', who: '*' },
  { ip: '203.0.113.10', port: 443, protocol: 'TCP', who: INTERNET_EGRESS },
  { ip: '203.0.113.10', port: 80, protocol: 'TCP', who: [] },
  // On 443, no address that is not public: private, shared (CGNAT), loopback, link-local (cloud
  // metadata), "this network", IETF protocol assignments, and Azure's host endpoint.
  { ip: '10.20.0.7', port: 443, protocol: 'TCP', who: [] },
  { ip: '172.20.0.7', port: 443, protocol: 'TCP', who: [] },
  { ip: '192.168.1.7', port: 443, protocol: 'TCP', who: [] },
  { ip: '100.100.100.200', port: 443, protocol: 'TCP', who: [] },
  { ip: '127.0.0.1', port: 443, protocol: 'TCP', who: [] },
  { ip: '169.254.169.254', port: 443, protocol: 'TCP', who: [] },
  { ip: '0.0.0.1', port: 443, protocol: 'TCP', who: [] },
  { ip: '192.0.0.192', port: 443, protocol: 'TCP', who: [] },
  { ip: '168.63.129.16', port: 443, protocol: 'TCP', who: [] },
];

interface Overlay {
  dir: string;
  namespace: string;
  /** Whether it runs the ads sandbox as its ad platform. */
  sandbox: boolean;
  /** Whether an autoscaler sets the gateway's replica count (dev runs one gateway). */
  gatewayAutoscaled: boolean;
}

const OVERLAYS: Record<string, Overlay> = {
  dev: { dir: join(K8S, 'overlays/dev'), namespace: 'ads-mcp-dev', sandbox: true, gatewayAutoscaled: false },
  production: {
    dir: join(K8S, 'overlays/production'),
    namespace: 'ads-mcp',
    sandbox: false,
    gatewayAutoscaled: true,
  },
};

// ---------------------------------------------------------------------------------------------
// Objects and YAML.

interface KObject {
  apiVersion: string;
  kind: string;
  metadata: { name: string; namespace?: string; labels?: Record<string, string>; [key: string]: unknown };
  [key: string]: unknown;
}

type Fields = Record<string, unknown>;

function isFields(value: unknown): value is Fields {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function fields(value: unknown, where: string): Fields {
  if (!isFields(value)) throw new Error(`${where}: expected a mapping`);
  return value;
}

function list(value: unknown, where: string): unknown[] {
  if (value === undefined) return [];
  if (!Array.isArray(value)) throw new Error(`${where}: expected a list`);
  return value;
}

function text(value: unknown, where: string): string {
  if (typeof value !== 'string' || value === '') throw new Error(`${where}: expected a non-empty string`);
  return value;
}

function onlyKeys(value: Fields, allowed: string[], where: string): void {
  for (const key of Object.keys(value)) {
    if (!allowed.includes(key)) {
      throw new Error(
        `${where}: "${key}" is not implemented by this renderer; model it here before using it`,
      );
    }
  }
}

function toObject(value: unknown, where: string): KObject {
  const o = fields(value, where);
  text(o.apiVersion, `${where}: apiVersion`);
  text(o.kind, `${where}: kind`);
  text(fields(o.metadata, `${where}: metadata`).name, `${where}: metadata.name`);
  return o as KObject;
}

/**
 * Every document of a YAML file, read as YAML 1.1 the way the Kubernetes tooling reads it
 * (so `on` or `yes` would turn boolean here too); duplicate keys and warnings are errors.
 */
function readYaml(file: string): unknown[] {
  const out: unknown[] = [];
  for (const doc of parseAllDocuments(readFileSync(file, 'utf8'), { version: '1.1' })) {
    const problems = [...doc.errors, ...doc.warnings];
    if (problems.length > 0) throw new Error(`${rel(file)}: ${problems.map((p) => p.message).join('; ')}`);
    const value: unknown = doc.toJS();
    if (value !== null && value !== undefined) out.push(value);
  }
  return out;
}

const idOf = (o: KObject) => `${o.kind}/${o.metadata.namespace ?? ''}/${o.metadata.name}`;
const nameOf = (o: KObject) => `${o.kind} ${o.metadata.name}`;

// ---------------------------------------------------------------------------------------------
// The renderer.

const KUSTOMIZATION_FIELDS = [
  'apiVersion',
  'kind',
  'resources',
  'components',
  'configMapGenerator',
  'patches',
  'namespace',
  'labels',
  'replicas',
  'images',
];

interface Resource {
  obj: KObject;
  /** A ConfigMap from configMapGenerator: it gets a content-hash suffix when rendering ends. */
  generated: boolean;
}

/**
 * kustomize renders the kustomization in `dir` as `kubectl kustomize` would, for the fields in
 * KUSTOMIZATION_FIELDS. Like kustomize, it applies a kustomization's resources, then its
 * components, then its generators, then its transformers; generated ConfigMap names get a
 * content-hash suffix and the pod templates that refer to them follow the new name.
 */
function kustomize(dir: string): KObject[] {
  const resources = build(dir, 'Kustomization', []);
  const renamed = new Map<string, string>();
  for (const r of resources.filter((x) => x.generated)) {
    const name = r.obj.metadata.name;
    const hashed = `${name}-${configMapHash(r.obj)}`;
    renamed.set(`${r.obj.metadata.namespace ?? ''}/${name}`, hashed);
    r.obj.metadata.name = hashed;
  }
  for (const { obj } of resources) {
    for (const c of podContainers(obj)) {
      for (const from of c.envFrom ?? []) {
        const ref = from.configMapRef;
        if (ref?.name !== undefined)
          ref.name = renamed.get(`${obj.metadata.namespace ?? ''}/${ref.name}`) ?? ref.name;
      }
      for (const env of c.env ?? []) {
        const ref = env.valueFrom?.configMapKeyRef;
        if (ref?.name !== undefined)
          ref.name = renamed.get(`${obj.metadata.namespace ?? ''}/${ref.name}`) ?? ref.name;
      }
    }
    for (const volume of podSpec(obj)?.volumes ?? []) {
      if (volume.configMap?.name !== undefined) {
        volume.configMap.name =
          renamed.get(`${obj.metadata.namespace ?? ''}/${volume.configMap.name}`) ?? volume.configMap.name;
      }
    }
  }
  return resources.map((r) => r.obj);
}

function build(dir: string, kind: 'Kustomization' | 'Component', acc: Resource[]): Resource[] {
  const file = join(dir, 'kustomization.yaml');
  const where = rel(file);
  if (!existsSync(file)) throw new Error(`${rel(dir)}: no kustomization.yaml`);
  const docs = readYaml(file);
  if (docs.length !== 1) throw new Error(`${where}: expected one document`);
  const k = fields(docs[0], where);
  onlyKeys(k, KUSTOMIZATION_FIELDS, where);
  const apiVersion =
    kind === 'Component' ? 'kustomize.config.k8s.io/v1alpha1' : 'kustomize.config.k8s.io/v1beta1';
  if (k.apiVersion !== apiVersion || k.kind !== kind) {
    throw new Error(`${where}: expected apiVersion ${apiVersion} and kind ${kind}`);
  }

  for (const entry of list(k.resources, `${where}: resources`)) {
    const path = resolve(dir, text(entry, `${where}: resources`));
    if (/^[a-z]+:\/\//.test(String(entry)) || !existsSync(path)) {
      throw new Error(`${where}: resource ${String(entry)} is not a local file or directory`);
    }
    const found = statSync(path).isDirectory()
      ? build(path, 'Kustomization', [])
      : readYaml(path).map((doc) => ({ obj: toObject(doc, rel(path)), generated: false }));
    for (const r of found) add(acc, r, where);
  }
  for (const entry of list(k.components, `${where}: components`)) {
    build(resolve(dir, text(entry, `${where}: components`)), 'Component', acc);
  }
  for (const entry of list(k.configMapGenerator, `${where}: configMapGenerator`)) {
    generateConfigMap(fields(entry, `${where}: configMapGenerator`), acc, where);
  }
  for (const entry of list(k.patches, `${where}: patches`)) {
    applyPatch(fields(entry, `${where}: patches`), dir, acc, where);
  }
  if (k.namespace !== undefined) setNamespace(text(k.namespace, `${where}: namespace`), acc, where);
  for (const entry of list(k.labels, `${where}: labels`)) {
    addLabels(fields(entry, `${where}: labels`), acc, where);
  }
  for (const entry of list(k.replicas, `${where}: replicas`)) {
    setReplicas(fields(entry, `${where}: replicas`), acc, where);
  }
  for (const entry of list(k.images, `${where}: images`)) {
    setImage(fields(entry, `${where}: images`), acc, where);
  }
  return acc;
}

function add(acc: Resource[], r: Resource, where: string): void {
  if (acc.some((x) => idOf(x.obj) === idOf(r.obj)))
    throw new Error(`${where}: ${nameOf(r.obj)} is defined twice`);
  acc.push(r);
}

function generateConfigMap(gen: Fields, acc: Resource[], where: string): void {
  onlyKeys(gen, ['name', 'behavior', 'literals'], `${where}: configMapGenerator`);
  const name = text(gen.name, `${where}: configMapGenerator name`);
  const behavior = gen.behavior ?? 'create';
  const data: Record<string, string> = {};
  for (const literal of list(gen.literals, `${where}: configMapGenerator ${name} literals`)) {
    const line = text(literal, `${where}: configMapGenerator ${name} literal`);
    const eq = line.indexOf('=');
    if (eq <= 0) throw new Error(`${where}: configMapGenerator ${name}: "${line}" is not KEY=value`);
    const value = line.slice(eq + 1);
    if (/^["']/.test(value)) throw new Error(`${where}: quoted literal values are not modelled (${line})`);
    data[line.slice(0, eq)] = value;
  }
  const existing = acc.find((r) => r.generated && r.obj.metadata.name === name);
  if (behavior === 'create') {
    if (existing !== undefined)
      throw new Error(`${where}: ConfigMap ${name} already generated; use behavior: merge`);
    add(
      acc,
      { obj: { apiVersion: 'v1', kind: 'ConfigMap', metadata: { name }, data }, generated: true },
      where,
    );
  } else if (behavior === 'merge' || behavior === 'replace') {
    if (existing === undefined) throw new Error(`${where}: no generated ConfigMap ${name} to ${behavior}`);
    const before = behavior === 'merge' ? (existing.obj.data as Record<string, string>) : {};
    existing.obj.data = { ...before, ...data };
  } else {
    throw new Error(`${where}: configMapGenerator behavior ${String(behavior)} is not modelled`);
  }
}

/** Only the strategic-merge patch that deletes a whole object is modelled. */
function applyPatch(patch: Fields, dir: string, acc: Resource[], where: string): void {
  onlyKeys(patch, ['path'], `${where}: patches`);
  const file = resolve(dir, text(patch.path, `${where}: patches path`));
  const docs = readYaml(file);
  const doc = fields(docs[0], rel(file));
  if (docs.length !== 1 || doc.$patch !== 'delete') {
    throw new Error(`${rel(file)}: only a single-document "$patch: delete" patch is modelled`);
  }
  onlyKeys(doc, ['apiVersion', 'kind', 'metadata', '$patch'], rel(file));
  const target = toObject(doc, rel(file));
  onlyKeys(target.metadata, ['name'], `${rel(file)}: metadata`);
  const index = acc.findIndex(
    (r) =>
      r.obj.apiVersion === target.apiVersion &&
      r.obj.kind === target.kind &&
      r.obj.metadata.name === target.metadata.name,
  );
  if (index < 0) throw new Error(`${rel(file)}: no ${nameOf(target)} to delete`);
  acc.splice(index, 1);
}

const CLUSTER_SCOPED = new Set(['Namespace']);

function setNamespace(namespace: string, acc: Resource[], where: string): void {
  for (const { obj } of acc) {
    if (!CLUSTER_SCOPED.has(obj.kind)) obj.metadata.namespace = namespace;
    else if (obj.kind === 'Namespace' && obj.metadata.name !== namespace) {
      // kustomize's handling of a Namespace object with another name is not modelled.
      throw new Error(`${where}: Namespace ${obj.metadata.name} differs from namespace: ${namespace}`);
    }
  }
}

function addLabels(entry: Fields, acc: Resource[], where: string): void {
  onlyKeys(entry, ['pairs', 'includeSelectors', 'includeTemplates'], `${where}: labels`);
  if (entry.includeSelectors === true) throw new Error(`${where}: labels includeSelectors is not modelled`);
  const pairs = fields(entry.pairs, `${where}: labels pairs`);
  const labels: Record<string, string> = {};
  for (const [key, value] of Object.entries(pairs)) labels[key] = text(value, `${where}: label ${key}`);
  for (const { obj } of acc) {
    obj.metadata.labels = { ...obj.metadata.labels, ...labels };
    const template = isFields(obj.spec) && isFields(obj.spec.template) ? obj.spec.template : undefined;
    if (
      entry.includeTemplates === true &&
      isFields(template?.metadata) &&
      isFields(template.metadata.labels)
    ) {
      template.metadata.labels = { ...template.metadata.labels, ...labels };
    }
  }
}

function setReplicas(entry: Fields, acc: Resource[], where: string): void {
  onlyKeys(entry, ['name', 'count'], `${where}: replicas`);
  const name = text(entry.name, `${where}: replicas name`);
  if (!Number.isInteger(entry.count)) throw new Error(`${where}: replicas ${name}: count must be an integer`);
  const targets = acc.filter((r) => r.obj.kind === 'Deployment' && r.obj.metadata.name === name);
  if (targets.length === 0) throw new Error(`${where}: replicas: no Deployment ${name}`);
  for (const { obj } of targets) fields(obj.spec, `${nameOf(obj)} spec`).replicas = entry.count;
}

/** An image reference split into repository name, tag and digest. */
function parseImage(image: string): { name: string; tag?: string; digest?: string } {
  const at = image.indexOf('@');
  const digest = at >= 0 ? image.slice(at + 1) : undefined;
  const rest = at >= 0 ? image.slice(0, at) : image;
  const colon = rest.lastIndexOf(':');
  const ref =
    colon > rest.lastIndexOf('/')
      ? { name: rest.slice(0, colon), tag: rest.slice(colon + 1) }
      : { name: rest };
  return digest === undefined ? ref : { ...ref, digest };
}

/** Stricter than kustomize: an `images` entry that matches no container is an error here. */
function setImage(entry: Fields, acc: Resource[], where: string): void {
  onlyKeys(entry, ['name', 'newName', 'newTag', 'digest'], `${where}: images`);
  const name = text(entry.name, `${where}: images name`);
  let matched = false;
  for (const { obj } of acc) {
    for (const c of podContainers(obj)) {
      const image = parseImage(c.image ?? '');
      if (image.name !== name) continue;
      matched = true;
      const newName = entry.newName === undefined ? name : text(entry.newName, `${where}: images newName`);
      if (entry.digest !== undefined) c.image = `${newName}@${text(entry.digest, `${where}: images digest`)}`;
      else if (entry.newTag !== undefined)
        c.image = `${newName}:${text(entry.newTag, `${where}: images newTag`)}`;
      else
        c.image = `${newName}${image.tag === undefined ? '' : `:${image.tag}`}${image.digest === undefined ? '' : `@${image.digest}`}`;
    }
  }
  if (!matched) throw new Error(`${where}: images: no container runs ${name}`);
}

/** The name suffix kustomize gives a generated ConfigMap: a hash of its kind, name and data. */
function configMapHash(cm: KObject): string {
  const stable = (value: unknown): string =>
    isFields(value)
      ? `{${Object.keys(value)
          .sort()
          .map((key) => `${JSON.stringify(key)}:${stable(value[key])}`)
          .join(',')}}`
      : JSON.stringify(value);
  const hex = createHash('sha256')
    .update(stable({ data: cm.data, kind: cm.kind, name: cm.metadata.name }))
    .digest('hex');
  const swap: Record<string, string> = { '0': 'g', '1': 'h', '3': 'k', a: 'm', e: 't' };
  return [...hex.slice(0, 10)].map((ch) => swap[ch] ?? ch).join('');
}

// ---------------------------------------------------------------------------------------------
// Typed views of the objects this repository uses.

type PodSpec = NonNullable<NonNullable<IDeployment['spec']>['template']['spec']>;
type LabelSelector = NonNullable<IDeployment['spec']>['selector'];
type Deploy = IDeployment & KObject;

function podSpec(obj: KObject): PodSpec | undefined {
  if (obj.kind !== 'Deployment') return undefined;
  return (obj as Deploy).spec?.template.spec;
}

function podContainers(obj: KObject): IContainer[] {
  const spec = podSpec(obj);
  return spec === undefined ? [] : [...(spec.initContainers ?? []), ...spec.containers];
}

function ofKind<T>(objects: KObject[], kind: string): (T & KObject)[] {
  return objects.filter((o) => o.kind === kind) as (T & KObject)[];
}

function find<T>(objects: KObject[], kind: string, name: string): T & KObject {
  const found = ofKind<T>(objects, kind).find((o) => o.metadata.name === name);
  if (found === undefined) throw new Error(`no ${kind} ${name}`);
  return found;
}

function mainContainer(d: Deploy): IContainer {
  const c = d.spec?.template.spec?.containers[0];
  if (c === undefined) throw new Error(`${nameOf(d)} has no container`);
  return c;
}

function podLabels(d: Deploy): Record<string, string> {
  return d.spec?.template.metadata?.labels ?? {};
}

/** Whether a label selector (matchLabels and matchExpressions) selects these labels. */
function selects(selector: LabelSelector | undefined, labels: Record<string, string>): boolean {
  if (selector === undefined) return false;
  for (const [key, value] of Object.entries(selector.matchLabels ?? {}))
    if (labels[key] !== value) return false;
  for (const e of selector.matchExpressions ?? []) {
    const value = labels[e.key];
    const ok =
      e.operator === 'In'
        ? value !== undefined && (e.values ?? []).includes(value)
        : e.operator === 'NotIn'
          ? value === undefined || !(e.values ?? []).includes(value)
          : e.operator === 'Exists'
            ? value !== undefined
            : e.operator === 'DoesNotExist'
              ? value === undefined
              : false;
    if (!ok) return false;
  }
  return true;
}

/** A resource quantity (`250m`, `1`, `256Mi`) as a number of cores or bytes; NaN if malformed. */
function quantity(q: string | number): number {
  if (typeof q === 'number') return q;
  const m = /^(\d+(?:\.\d+)?)(m|k|M|G|T|Ki|Mi|Gi|Ti)?$/.exec(q);
  if (m === null) return Number.NaN;
  const factor: Record<string, number> = {
    m: 1e-3,
    k: 1e3,
    M: 1e6,
    G: 1e9,
    T: 1e12,
    Ki: 2 ** 10,
    Mi: 2 ** 20,
    Gi: 2 ** 30,
    Ti: 2 ** 40,
  };
  return Number(m[1]) * (factor[m[2] ?? ''] ?? 1);
}

// ---------------------------------------------------------------------------------------------
// Schema validation.

interface KindSchema {
  /** Validates against the kind's OpenAPI schema (kubernetes-models' compiled validators). */
  validate(obj: KObject): void;
  /** Where the kind's TypeScript interface lives, for the unknown-field check. */
  typeModule: string;
  typeName: string;
}

const SCHEMAS: Record<string, KindSchema> = {
  'v1/Namespace': {
    validate: (o) => new Namespace(o as INamespace).validate(),
    typeModule: 'kubernetes-models/v1/Namespace',
    typeName: 'INamespace',
  },
  'v1/ServiceAccount': {
    validate: (o) => new ServiceAccount(o as IServiceAccount).validate(),
    typeModule: 'kubernetes-models/v1/ServiceAccount',
    typeName: 'IServiceAccount',
  },
  'v1/Service': {
    validate: (o) => new Service(o as IService).validate(),
    typeModule: 'kubernetes-models/v1/Service',
    typeName: 'IService',
  },
  'v1/ConfigMap': {
    validate: (o) => new ConfigMap(o as IConfigMap).validate(),
    typeModule: 'kubernetes-models/v1/ConfigMap',
    typeName: 'IConfigMap',
  },
  'apps/v1/Deployment': {
    validate: (o) => new Deployment(o as IDeployment).validate(),
    typeModule: 'kubernetes-models/apps/v1/Deployment',
    typeName: 'IDeployment',
  },
  'autoscaling/v2/HorizontalPodAutoscaler': {
    validate: (o) => new HorizontalPodAutoscaler(o as IHorizontalPodAutoscaler).validate(),
    typeModule: 'kubernetes-models/autoscaling/v2/HorizontalPodAutoscaler',
    typeName: 'IHorizontalPodAutoscaler',
  },
  'policy/v1/PodDisruptionBudget': {
    validate: (o) => new PodDisruptionBudget(o as IPodDisruptionBudget).validate(),
    typeModule: 'kubernetes-models/policy/v1/PodDisruptionBudget',
    typeName: 'IPodDisruptionBudget',
  },
  'networking.k8s.io/v1/NetworkPolicy': {
    validate: (o) => new NetworkPolicy(o as INetworkPolicy).validate(),
    typeModule: 'kubernetes-models/networking.k8s.io/v1/NetworkPolicy',
    typeName: 'INetworkPolicy',
  },
};

/** Objects whose kind has no schema here, or that break their kind's schema (types, required fields). */
function schemaProblems(objects: KObject[]): string[] {
  const problems: string[] = [];
  for (const o of objects) {
    const schema = SCHEMAS[`${o.apiVersion}/${o.kind}`];
    if (schema === undefined) {
      problems.push(`${nameOf(o)}: no schema for ${o.apiVersion} ${o.kind}`);
      continue;
    }
    try {
      schema.validate(o);
    } catch (err) {
      problems.push(`${nameOf(o)}: ${(err as Error).message}`);
    }
  }
  return problems;
}

/**
 * Fields no Kubernetes API type has, such as a misspelt `readOnlyRootFileSystem`. The OpenAPI
 * schemas allow unknown fields (the API server drops them, silently, unless asked to be
 * strict), so this check type-checks each object as an object literal of its kind's generated
 * TypeScript interface: TypeScript's excess-property check names every unknown field.
 */
function unknownFieldProblems(objects: KObject[]): string[] {
  const dir = join(ROOT, 'deploy/k8s/test/.typecheck');
  const files = new Map<string, { text: string; obj: KObject }>();
  objects.forEach((obj, i) => {
    const schema = SCHEMAS[`${obj.apiVersion}/${obj.kind}`];
    if (schema === undefined) return;
    const text = `import type { ${schema.typeName} } from '${schema.typeModule}';\nexport const object: ${schema.typeName} = ${JSON.stringify(obj, null, 2)};\n`;
    files.set(join(dir, `object-${i}.ts`), { text, obj });
  });
  const options: ts.CompilerOptions = {
    strict: true,
    noEmit: true,
    skipLibCheck: true,
    target: ts.ScriptTarget.ES2022,
    module: ts.ModuleKind.ESNext,
    moduleResolution: ts.ModuleResolutionKind.Bundler,
    lib: ['lib.es2022.d.ts'],
    types: [],
  };
  const host = ts.createCompilerHost(options);
  const getSourceFile = host.getSourceFile.bind(host);
  host.getSourceFile = (name, language, ...rest) => {
    const virtual = files.get(name);
    return virtual === undefined
      ? getSourceFile(name, language, ...rest)
      : ts.createSourceFile(name, virtual.text, language);
  };
  const fileExists = host.fileExists.bind(host);
  host.fileExists = (name) => files.has(name) || fileExists(name);
  const readFile = host.readFile.bind(host);
  host.readFile = (name) => files.get(name)?.text ?? readFile(name);
  const program = ts.createProgram([...files.keys()], options, host);
  return ts.getPreEmitDiagnostics(program).map((d) => {
    const message = ts.flattenDiagnosticMessageText(d.messageText, ' ');
    const virtual = d.file === undefined ? undefined : files.get(d.file.fileName);
    if (virtual === undefined || d.file === undefined) return message;
    const line = d.file.getLineAndCharacterOfPosition(d.start ?? 0).line;
    return `${nameOf(virtual.obj)}: ${message} (at ${virtual.text.split('\n')[line]?.trim()})`;
  });
}

// ---------------------------------------------------------------------------------------------
// Workloads, environment and Services.

/**
 * Deployments that are not what deploy/k8s/README.md promises: a Service and ServiceAccount of
 * the same name, non-root with a read-only root filesystem and no capabilities, requests and
 * limits, the right probes, a writable /tmp, 30 s to drain.
 */
function workloadProblems(objects: KObject[]): string[] {
  const problems: string[] = [];
  const serviceAccounts = ofKind<IServiceAccount>(objects, 'ServiceAccount');
  for (const d of ofKind<IDeployment>(objects, 'Deployment')) {
    const name = d.metadata.name;
    const say = (problem: string) => problems.push(`Deployment ${name}: ${problem}`);
    const expected = SERVICES[name];
    const pod = d.spec?.template.spec;
    if (expected === undefined || pod === undefined) {
      say('is not one of the known processes, or has no pod spec');
      continue;
    }
    if (d.spec?.selector.matchLabels?.app !== name) say(`selector must be app=${name}`);
    if (!selects(d.spec?.selector, podLabels(d))) say('selector does not select its own pod template');
    if (!ofKind<IService>(objects, 'Service').some((s) => s.metadata.name === name)) say('has no Service');
    const sa = serviceAccounts.find((s) => s.metadata.name === pod.serviceAccountName);
    if (pod.serviceAccountName !== name || sa === undefined)
      say(`must run as ServiceAccount ${name}, defined here`);
    if (sa !== undefined && sa.automountServiceAccountToken !== false) say('ServiceAccount mounts its token');
    if (pod.automountServiceAccountToken !== false) say('pod mounts a ServiceAccount token');
    if (pod.terminationGracePeriodSeconds !== 30) say('terminationGracePeriodSeconds must be 30');
    if (pod.containers.length !== 1) say('must run exactly one container');
    if ((pod.initContainers ?? []).length > 0) say('has init containers, which these checks do not cover');
    const tmp = pod.volumes?.find((v) => v.emptyDir !== undefined);
    for (const c of pod.containers) {
      const sc = c.securityContext ?? {};
      const podSc = pod.securityContext ?? {};
      if ((sc.runAsNonRoot ?? podSc.runAsNonRoot) !== true) say(`${c.name}: runAsNonRoot must be true`);
      if ((sc.runAsUser ?? podSc.runAsUser) !== NODE_UID) say(`${c.name}: runAsUser must be ${NODE_UID}`);
      if ((sc.seccompProfile ?? podSc.seccompProfile)?.type !== 'RuntimeDefault') {
        say(`${c.name}: seccompProfile must be RuntimeDefault`);
      }
      if (sc.readOnlyRootFilesystem !== true) say(`${c.name}: readOnlyRootFilesystem must be true`);
      if (sc.allowPrivilegeEscalation !== false) say(`${c.name}: allowPrivilegeEscalation must be false`);
      if (sc.privileged === true) say(`${c.name}: must not be privileged`);
      if (!(sc.capabilities?.drop ?? []).includes('ALL')) say(`${c.name}: capabilities must drop ALL`);
      if ((sc.capabilities?.add ?? []).length > 0) say(`${c.name}: must add no capabilities`);
      for (const resource of ['cpu', 'memory']) {
        const request = c.resources?.requests?.[resource];
        const limit = c.resources?.limits?.[resource];
        if (request === undefined || limit === undefined)
          say(`${c.name}: needs a ${resource} request and limit`);
        else if (!(quantity(request) <= quantity(limit)))
          say(`${c.name}: ${resource} request exceeds its limit`);
      }
      if (!(c.ports ?? []).some((p) => p.containerPort === expected.port))
        say(`${c.name}: must expose ${expected.port}`);
      for (const [which, probe] of [
        ['liveness', c.livenessProbe],
        ['readiness', c.readinessProbe],
      ] as const) {
        if (probe === undefined) {
          say(`${c.name}: needs a ${which} probe`);
        } else if (expected.probes.kind === 'grpc') {
          if (probe.grpc?.port !== expected.port)
            say(`${c.name}: ${which} probe must be grpc on ${expected.port}`);
        } else {
          const path = which === 'liveness' ? expected.probes.liveness : expected.probes.readiness;
          const port = probe.httpGet?.port;
          const resolved =
            typeof port === 'string' ? c.ports?.find((p) => p.name === port)?.containerPort : port;
          if (probe.httpGet?.path !== path || resolved !== expected.port) {
            say(`${c.name}: ${which} probe must be GET ${path} on ${expected.port}`);
          }
        }
      }
      const tmpMount = c.volumeMounts?.find((m) => m.mountPath === '/tmp');
      if (tmp === undefined || tmpMount?.name !== tmp.name) say(`${c.name}: needs an emptyDir at /tmp`);
    }
  }
  return problems;
}

type EnvSource =
  | { from: 'value'; value: string }
  | { from: 'secret'; name: string; key: string }
  | { from: 'configMap'; name: string; key: string; value: string | undefined }
  | { from: 'other' };

/** The environment a container starts with: envFrom ConfigMaps first, then env, which wins. */
function containerEnv(
  c: IContainer,
  objects: KObject[],
): { env: Map<string, EnvSource>; problems: string[] } {
  const env = new Map<string, EnvSource>();
  const problems: string[] = [];
  const configMap = (name: string) =>
    ofKind<IConfigMap>(objects, 'ConfigMap').find((m) => m.metadata.name === name);
  for (const from of c.envFrom ?? []) {
    if (from.secretRef !== undefined)
      problems.push('takes a whole Secret by envFrom; name each key by secretKeyRef');
    if (from.prefix !== undefined) problems.push('envFrom prefix is not modelled');
    const name = from.configMapRef?.name;
    if (name === undefined) continue;
    const cm = configMap(name);
    if (cm === undefined) problems.push(`envFrom refers to ConfigMap ${name}, which is not rendered`);
    for (const [key, value] of Object.entries(cm?.data ?? {}))
      env.set(key, { from: 'configMap', name, key, value });
  }
  const seen = new Set<string>();
  for (const e of c.env ?? []) {
    if (seen.has(e.name)) problems.push(`sets ${e.name} twice`);
    seen.add(e.name);
    const secret = e.valueFrom?.secretKeyRef;
    const cmRef = e.valueFrom?.configMapKeyRef;
    if (e.value !== undefined) env.set(e.name, { from: 'value', value: e.value });
    else if (secret !== undefined)
      env.set(e.name, { from: 'secret', name: secret.name ?? '', key: secret.key });
    else if (cmRef !== undefined) {
      const value = configMap(cmRef.name ?? '')?.data?.[cmRef.key];
      if (value === undefined)
        problems.push(`${e.name} refers to ConfigMap key ${cmRef.name}/${cmRef.key}, not rendered`);
      env.set(e.name, { from: 'configMap', name: cmRef.name ?? '', key: cmRef.key, value });
    } else env.set(e.name, { from: 'other' });
  }
  return { env, problems };
}

const envValue = (source: EnvSource | undefined) =>
  source?.from === 'value' ? source.value : source?.from === 'configMap' ? source.value : undefined;

/**
 * Every variable each process requires is set; secrets come only from Secrets by secretKeyRef,
 * named in the README; no ConfigMap holds anything secret; PORT and HOST match the pod.
 */
function envProblems(objects: KObject[], readme: string): string[] {
  const problems: string[] = [];
  for (const d of ofKind<IDeployment>(objects, 'Deployment')) {
    const expected = SERVICES[d.metadata.name];
    for (const c of d.spec?.template.spec?.containers ?? []) {
      const say = (problem: string) => problems.push(`Deployment ${d.metadata.name} ${c.name}: ${problem}`);
      const { env, problems: found } = containerEnv(c, objects);
      found.forEach(say);
      for (const name of expected?.env ?? []) if (!env.has(name)) say(`${name} is not set`);
      for (const [name, source] of env) {
        if (looksSecret(name) && source.from !== 'secret') say(`${name} is secret: take it by secretKeyRef`);
        if (
          source.from === 'secret' &&
          !(readme.includes(`\`${source.name}\``) && readme.includes(`\`${source.key}\``))
        ) {
          say(`Secret ${source.name} key ${source.key} is not documented in deploy/k8s/README.md`);
        }
      }
      if (expected !== undefined && envValue(env.get('PORT')) !== String(expected.port)) {
        say(`PORT must be ${expected.port}, the container port`);
      }
      if (envValue(env.get('HOST')) !== '0.0.0.0') say('HOST must be 0.0.0.0');
    }
  }
  for (const cm of ofKind<IConfigMap>(objects, 'ConfigMap')) {
    for (const [key, value] of Object.entries(cm.data ?? {})) {
      if (looksSecret(key)) problems.push(`ConfigMap ${cm.metadata.name}: ${key} is secret`);
      if (/-----BEGIN [A-Z ]*PRIVATE KEY-----|:\/\/[^/@\s]+:[^/@\s]+@/.test(value)) {
        problems.push(`ConfigMap ${cm.metadata.name}: ${key} holds a private key or a password`);
      }
    }
  }
  return problems;
}

/**
 * Each Service selects the pods of exactly its own Deployment, on ports those pods expose; and
 * every in-cluster URL a process is given (http://name:port) names a Service with that port.
 */
function serviceProblems(objects: KObject[]): string[] {
  const problems: string[] = [];
  const deployments = ofKind<IDeployment>(objects, 'Deployment');
  const services = ofKind<IService>(objects, 'Service');
  for (const s of services) {
    const say = (problem: string) => problems.push(`Service ${s.metadata.name}: ${problem}`);
    const selector = s.spec?.selector ?? {};
    if (Object.keys(selector).length === 0) say('has no selector');
    const selected = deployments.filter((d) => selects({ matchLabels: selector }, podLabels(d)));
    const own = selected[0];
    if (selected.length !== 1 || own === undefined || own.metadata.name !== s.metadata.name) {
      say(
        `must select the pods of Deployment ${s.metadata.name} alone (selects ${selected.map(nameOf).join(', ')})`,
      );
      continue;
    }
    for (const p of s.spec?.ports ?? []) {
      const target = p.targetPort ?? p.port;
      const cPort = own.spec?.template.spec?.containers
        .flatMap((c) => c.ports ?? [])
        .find((cp) => (typeof target === 'string' ? cp.name === target : cp.containerPort === target));
      if (cPort === undefined) say(`port ${p.port} targets ${target}, which the pods do not expose`);
      else if ((cPort.protocol ?? 'TCP') !== (p.protocol ?? 'TCP'))
        say(`port ${p.port} protocol differs from the pod's`);
    }
  }
  for (const d of deployments) {
    for (const c of d.spec?.template.spec?.containers ?? []) {
      for (const [name, source] of containerEnv(c, objects).env) {
        const value = envValue(source);
        if (value === undefined || !/^https?:\/\//.test(value)) continue;
        const url = new URL(value);
        if (url.hostname.includes('.') || url.hostname === 'localhost') continue;
        const port = Number(url.port || (url.protocol === 'https:' ? 443 : 80));
        const service = services.find((s) => s.metadata.name === url.hostname);
        if (service === undefined || !(service.spec?.ports ?? []).some((p) => p.port === port)) {
          problems.push(
            `Deployment ${d.metadata.name}: ${name}=${value} names no Service port in the namespace`,
          );
        }
      }
    }
  }
  return problems;
}

/**
 * The gateway is scaled by its HorizontalPodAutoscaler, which therefore owns the replica count,
 * and every service that runs as replicas (all but the sandbox) is protected by a
 * PodDisruptionBudget that selects its pods and lets at most one go at a time.
 */
function scalingProblems(objects: KObject[], opts: { autoscaled: boolean }): string[] {
  const problems: string[] = [];
  const deployments = ofKind<IDeployment>(objects, 'Deployment');
  const hpas = ofKind<IHorizontalPodAutoscaler>(objects, 'HorizontalPodAutoscaler');
  for (const h of hpas) {
    const ref = h.spec?.scaleTargetRef;
    const target = deployments.find((d) => ref?.kind === 'Deployment' && d.metadata.name === ref.name);
    if (target === undefined || ref?.apiVersion !== 'apps/v1') {
      problems.push(`HorizontalPodAutoscaler ${h.metadata.name}: targets no Deployment here`);
      continue;
    }
    if (target.spec?.replicas !== undefined) {
      problems.push(`Deployment ${target.metadata.name}: sets replicas, which its autoscaler owns`);
    }
    if ((h.spec?.minReplicas ?? 1) < 2 || (h.spec?.maxReplicas ?? 0) < (h.spec?.minReplicas ?? 1)) {
      problems.push(
        `HorizontalPodAutoscaler ${h.metadata.name}: needs minReplicas >= 2 and maxReplicas >= minReplicas`,
      );
    }
    if (!target.spec?.template.spec?.containers.every((c) => c.resources?.requests?.cpu !== undefined)) {
      problems.push(`HorizontalPodAutoscaler ${h.metadata.name}: CPU utilisation needs CPU requests`);
    }
  }
  const gatewayHpa = hpas.some((h) => h.spec?.scaleTargetRef.name === 'gateway');
  if (gatewayHpa !== opts.autoscaled)
    problems.push(`the gateway must ${opts.autoscaled ? '' : 'not '}be autoscaled`);
  const pdbs = ofKind<IPodDisruptionBudget>(objects, 'PodDisruptionBudget');
  for (const p of pdbs) {
    const selected = deployments.filter((d) => selects(p.spec?.selector, podLabels(d)));
    if (selected.length !== 1)
      problems.push(`PodDisruptionBudget ${p.metadata.name}: must select one Deployment's pods`);
  }
  for (const d of deployments) {
    if (d.metadata.name === 'ads-sandbox') continue;
    const budget = pdbs.find((p) => selects(p.spec?.selector, podLabels(d)));
    if (budget === undefined) problems.push(`the ${d.metadata.name} has no PodDisruptionBudget`);
    else if (budget.spec?.maxUnavailable !== 1) {
      problems.push(
        `PodDisruptionBudget ${budget.metadata.name}: must let one pod go at a time (maxUnavailable: 1)`,
      );
    }
  }
  return problems;
}

/** Everything is in the overlay's namespace, which exists and enforces the restricted standard. */
function namespaceProblems(objects: KObject[], namespace: string): string[] {
  const problems: string[] = [];
  const ns = ofKind<INamespace>(objects, 'Namespace');
  if (ns.length !== 1 || ns[0]?.metadata.name !== namespace)
    problems.push(`expected one Namespace, ${namespace}`);
  else if (ns[0].metadata.labels?.['pod-security.kubernetes.io/enforce'] !== 'restricted') {
    problems.push(`Namespace ${namespace} must enforce the restricted pod security standard`);
  }
  for (const o of objects) {
    if (o.kind !== 'Namespace' && o.metadata.namespace !== namespace)
      problems.push(`${nameOf(o)}: not in ${namespace}`);
  }
  return problems;
}

// ---------------------------------------------------------------------------------------------
// Network policies, evaluated.

interface Pod {
  app: string;
  labels: Record<string, string>;
  ports: { name?: string; port: number; protocol: string }[];
}

type Endpoint = { pod: Pod } | { ip: string };

function pods(objects: KObject[]): Pod[] {
  return ofKind<IDeployment>(objects, 'Deployment').map((d) => ({
    app: d.metadata.name,
    labels: podLabels(d),
    ports: (d.spec?.template.spec?.containers ?? []).flatMap((c) =>
      (c.ports ?? []).map((p) => ({ name: p.name, port: p.containerPort, protocol: p.protocol ?? 'TCP' })),
    ),
  }));
}

function ipv4(ip: string): number {
  const parts = ip.split('.').map(Number);
  if (parts.length !== 4 || parts.some((p) => !Number.isInteger(p) || p < 0 || p > 255)) {
    throw new Error(`not an IPv4 address: ${ip}`);
  }
  return parts.reduce((n, p) => n * 256 + p, 0);
}

function inCidr(ip: string, cidr: string): boolean {
  const [base = '', bits = ''] = cidr.split('/');
  const prefix = Number(bits);
  if (!Number.isInteger(prefix) || prefix < 0 || prefix > 32) throw new Error(`not an IPv4 CIDR: ${cidr}`);
  const size = 2 ** (32 - prefix);
  return Math.floor(ipv4(ip) / size) === Math.floor(ipv4(base) / size);
}

type Peer = NonNullable<NonNullable<NonNullable<INetworkPolicy['spec']>['egress']>[number]['to']>[number];
type PolicyPort = NonNullable<
  NonNullable<NonNullable<INetworkPolicy['spec']>['egress']>[number]['ports']
>[number];

/**
 * Whether a policy peer matches an endpoint. Peers are pods of this namespace (podSelector) or
 * addresses (ipBlock); ipBlock is taken to match only addresses outside the cluster's pods, as
 * the NetworkPolicy API intends. namespaceSelector is not modelled, and refused.
 */
function peerMatches(peer: Peer, endpoint: Endpoint): boolean {
  if (peer.namespaceSelector !== undefined) throw new Error('namespaceSelector peers are not modelled');
  if (peer.podSelector !== undefined)
    return 'pod' in endpoint && selects(peer.podSelector, endpoint.pod.labels);
  if (peer.ipBlock !== undefined) {
    return (
      'ip' in endpoint &&
      inCidr(endpoint.ip, peer.ipBlock.cidr) &&
      !(peer.ipBlock.except ?? []).some((cidr) => inCidr(endpoint.ip, cidr))
    );
  }
  return false;
}

function portMatches(rule: PolicyPort, port: number, protocol: string, destination: Endpoint): boolean {
  if ((rule.protocol ?? 'TCP') !== protocol) return false;
  if (rule.port === undefined) return true;
  if (typeof rule.port === 'string') {
    return 'pod' in destination && destination.pod.ports.some((p) => p.name === rule.port && p.port === port);
  }
  return port >= rule.port && port <= (rule.endPort ?? rule.port);
}

/** Whether the policies let `from` open a connection to `to` on port/protocol: egress and ingress. */
function allowed(
  policies: INetworkPolicy[],
  from: Endpoint,
  to: Endpoint,
  port: number,
  protocol: string,
): boolean {
  const side = (self: Endpoint, other: Endpoint, type: 'Ingress' | 'Egress') => {
    if (!('pod' in self)) return true;
    const applying = policies.filter((p) => {
      const types =
        p.spec?.policyTypes ?? (p.spec?.egress === undefined ? ['Ingress'] : ['Ingress', 'Egress']);
      return types.includes(type) && selects(p.spec?.podSelector, self.pod.labels);
    });
    if (applying.length === 0) return true;
    return applying.some((p) =>
      (type === 'Egress'
        ? (p.spec?.egress ?? []).map((r) => ({ peers: r.to, ports: r.ports }))
        : (p.spec?.ingress ?? []).map((r) => ({ peers: r.from, ports: r.ports }))
      ).some(
        (rule) =>
          (rule.peers === undefined ||
            rule.peers.length === 0 ||
            rule.peers.some((peer) => peerMatches(peer, other))) &&
          (rule.ports === undefined ||
            rule.ports.length === 0 ||
            rule.ports.some((r) => portMatches(r, port, protocol, to))),
      ),
    );
  };
  return side(from, to, 'Egress') && side(to, from, 'Ingress');
}

/**
 * Network policies that do not deny by default, give an address block to reach to any pod but
 * those in INTERNET_EGRESS (one policy each), or allow other flows than `flows` (between pods,
 * and from outside) and EGRESS.
 */
function networkProblems(objects: KObject[], flows: string[]): string[] {
  const problems: string[] = [];
  const policies = ofKind<INetworkPolicy>(objects, 'NetworkPolicy');
  const all = pods(objects);
  const denyAll = policies.some(
    (p) =>
      Object.keys(p.spec?.podSelector ?? { x: 1 }).length === 0 &&
      (['Ingress', 'Egress'] as const).every((t) => p.spec?.policyTypes?.includes(t)) &&
      (p.spec?.ingress ?? []).length === 0 &&
      (p.spec?.egress ?? []).length === 0,
  );
  if (!denyAll) problems.push('no default-deny policy (podSelector {}, Ingress and Egress, no rules)');
  for (const p of policies) {
    const withBlock = (p.spec?.egress ?? []).some((r) =>
      (r.to ?? []).some((peer) => peer.ipBlock !== undefined),
    );
    const selected = all.filter((pod) => selects(p.spec?.podSelector, pod.labels)).map((pod) => pod.app);
    if (withBlock && (selected.length !== 1 || !INTERNET_EGRESS.includes(selected[0] ?? ''))) {
      problems.push(
        `NetworkPolicy ${p.metadata.name}: gives ${selected.join(', ')} egress to an address block`,
      );
    }
  }
  const outside: Endpoint = { ip: '198.51.100.7' };
  const seen: string[] = [];
  for (const from of [
    { name: 'outside', endpoint: outside },
    ...all.map((pod) => ({ name: pod.app, endpoint: { pod } })),
  ]) {
    for (const to of all) {
      for (const p of to.ports) {
        if (allowed(policies, from.endpoint, { pod: to }, p.port, p.protocol))
          seen.push(`${from.name}->${to.app}:${p.port}`);
      }
    }
  }
  const unexpected = seen.filter((f) => !flows.includes(f));
  const missing = flows.filter((f) => !seen.includes(f));
  if (unexpected.length > 0) problems.push(`flows allowed that should not be: ${unexpected.join(', ')}`);
  if (missing.length > 0) problems.push(`flows denied that should be allowed: ${missing.join(', ')}`);
  for (const e of EGRESS) {
    for (const pod of all) {
      const expected = e.who === '*' || e.who.includes(pod.app);
      if (allowed(policies, { pod }, { ip: e.ip }, e.port, e.protocol) !== expected) {
        problems.push(
          `${pod.app} -> ${e.ip}:${e.port}/${e.protocol} must be ${expected ? 'allowed' : 'denied'}`,
        );
      }
    }
  }
  return problems;
}

/** Objects that are, or point at, the ads sandbox. */
function sandboxMentions(objects: KObject[]): string[] {
  return objects.filter((o) => JSON.stringify(o).includes('sandbox')).map(nameOf);
}

// ---------------------------------------------------------------------------------------------
// The tests.

const README = readFileSync(join(K8S, 'README.md'), 'utf8');
const rendered = new Map<string, KObject[]>();
/** A fresh copy of an overlay's render, so a test may change it. */
function render(overlay: Overlay): KObject[] {
  let objects = rendered.get(overlay.dir);
  if (objects === undefined) {
    objects = kustomize(overlay.dir);
    rendered.set(overlay.dir, objects);
  }
  return structuredClone(objects);
}

const flowsOf = (overlay: Overlay) =>
  overlay.sandbox ? [...FLOWS, 'upstream-proxy->ads-sandbox:8080'] : FLOWS;

for (const [name, overlay] of Object.entries(OVERLAYS)) {
  describe(`the ${name} overlay`, () => {
    it('renders only kinds with a known schema, each valid against it', () => {
      const objects = render(overlay);
      assert.ok(objects.length > 0);
      assert.deepEqual(schemaProblems(objects), []);
    });

    it('contains no field unknown to the Kubernetes API', () => {
      assert.deepEqual(unknownFieldProblems(render(overlay)), []);
    });

    it('runs each process as a Deployment with its own Service and ServiceAccount, non-root, read-only, without capabilities, with requests, limits and probes', () => {
      const objects = render(overlay);
      const expected = Object.keys(SERVICES).filter((s) => overlay.sandbox || s !== 'ads-sandbox');
      const deployments = ofKind<IDeployment>(objects, 'Deployment').map((d) => d.metadata.name);
      assert.deepEqual(deployments.sort(), expected.sort());
      assert.deepEqual(workloadProblems(objects), []);
    });

    it('gives each process every variable it requires, its secrets only by secretKeyRef', () => {
      assert.deepEqual(envProblems(render(overlay), README), []);
    });

    it("selects each Deployment's pods with its Service, on ports the pods expose", () => {
      assert.deepEqual(serviceProblems(render(overlay)), []);
    });

    it('gives every replicated service a disruption budget, and the gateway an autoscaler that owns its replica count where it scales', () => {
      assert.deepEqual(scalingProblems(render(overlay), { autoscaled: overlay.gatewayAutoscaled }), []);
    });

    it('puts everything in its namespace, which enforces the restricted pod security standard', () => {
      assert.deepEqual(namespaceProblems(render(overlay), overlay.namespace), []);
    });

    it('denies all traffic by default and allows only the documented flows; only the upstream-proxy and marketing reach the internet, on 443 to public addresses', () => {
      assert.deepEqual(networkProblems(render(overlay), flowsOf(overlay)), []);
    });
  });
}

describe('the production overlay, specifically', () => {
  const production = OVERLAYS.production as Overlay;

  it('contains no ads sandbox, nor any reference to it', () => {
    assert.deepEqual(sandboxMentions(render(production)), []);
  });

  it('runs every service from a registry image pinned to a release tag or digest', () => {
    for (const d of ofKind<IDeployment>(render(production), 'Deployment')) {
      const image = parseImage(mainContainer(d).image ?? '');
      assert.ok(image.name.endsWith(`/adsmcp/${d.metadata.name}`), `${d.metadata.name} runs ${image.name}`);
      assert.ok(image.name.includes('.'), `${d.metadata.name}: ${image.name} names no registry`);
      assert.ok(
        image.digest !== undefined || (image.tag !== undefined && !['latest', 'dev'].includes(image.tag)),
        `${d.metadata.name}: image is not pinned`,
      );
    }
  });

  it('runs at least two replicas of every service', () => {
    const objects = render(production);
    for (const d of ofKind<IDeployment>(objects, 'Deployment')) {
      const hpa = ofKind<IHorizontalPodAutoscaler>(objects, 'HorizontalPodAutoscaler').find(
        (h) => h.spec?.scaleTargetRef.name === d.metadata.name,
      );
      const replicas = hpa?.spec?.minReplicas ?? d.spec?.replicas ?? 1;
      assert.ok(replicas >= 2, `${d.metadata.name} runs ${replicas}`);
    }
  });

  it('talks to an ad platform over https', () => {
    const objects = render(production);
    const { env } = containerEnv(
      mainContainer(find<IDeployment>(objects, 'Deployment', 'upstream-proxy')),
      objects,
    );
    assert.match(envValue(env.get('UPSTREAM_URL')) ?? '', /^https:\/\//);
  });
});

describe('the dev overlay, specifically', () => {
  const dev = OVERLAYS.dev as Overlay;

  it('points the upstream-proxy at the ads sandbox', () => {
    const objects = render(dev);
    const { env } = containerEnv(
      mainContainer(find<IDeployment>(objects, 'Deployment', 'upstream-proxy')),
      objects,
    );
    assert.equal(envValue(env.get('UPSTREAM_URL')), 'http://ads-sandbox:8080');
  });

  it('runs one replica of everything, dev-tagged', () => {
    for (const d of ofKind<IDeployment>(render(dev), 'Deployment')) {
      assert.equal(d.spec?.replicas ?? 1, 1, d.metadata.name);
      assert.equal(mainContainer(d).image, `adsmcp/${d.metadata.name}:dev`);
    }
  });
});

describe('the configuration', () => {
  const kafkaBrokers = (objects: KObject[], name: string) =>
    containerEnv(mainContainer(find<IDeployment>(objects, 'Deployment', name)), objects).env.get(
      'KAFKA_BROKERS',
    );

  it('runs the bus on the PostgreSQL queue unless an overlay names Kafka brokers', () => {
    for (const overlay of Object.values(OVERLAYS)) {
      const objects = render(overlay);
      for (const name of KAFKA_READERS) assert.equal(envValue(kafkaBrokers(objects, name)), '', name);
    }
  });

  it("gives the brokers of the README's Kafka example to the processes whose bus reads them, and to no other", () => {
    const example = [...README.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => m[1] ?? '')
      .find((block) => block.includes('KAFKA_BROKERS='));
    assert.ok(example !== undefined, 'the README shows how to set KAFKA_BROKERS in an overlay');
    const snippet = fields(parseAllDocuments(example, { version: '1.1' })[0]?.toJS(), 'the README example');
    const production = OVERLAYS.production as Overlay;
    const overlay = fields(readYaml(join(production.dir, 'kustomization.yaml'))[0], 'production');
    const dir = mkdtempSync(join(tmpdir(), 'kustomize-'));
    try {
      const withKafka = {
        ...overlay,
        resources: list(overlay.resources, 'resources').map((r) => resolve(production.dir, String(r))),
        configMapGenerator: [
          ...list(overlay.configMapGenerator, 'configMapGenerator'),
          ...list(snippet.configMapGenerator, 'the README example'),
        ],
      };
      writeFileSync(join(dir, 'kustomization.yaml'), stringify(withKafka));
      const objects = kustomize(dir);
      const brokers = /KAFKA_BROKERS=(\S+)/.exec(example)?.[1];
      for (const d of ofKind<IDeployment>(objects, 'Deployment')) {
        const name = d.metadata.name;
        const expected = KAFKA_READERS.includes(name) ? brokers : undefined;
        assert.equal(envValue(kafkaBrokers(objects, name)), expected, name);
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("names Kafka's TLS and SASL settings for the processes whose bus reads them, the SASL credentials from the optional Secret adsmcp-kafka, and the README's example reaches them alone", () => {
    const settings = ['KAFKA_SSL', 'KAFKA_SASL_MECHANISM', 'KAFKA_SASL_USERNAME', 'KAFKA_SASL_PASSWORD'];
    for (const overlay of Object.values(OVERLAYS)) {
      const objects = render(overlay);
      for (const d of ofKind<IDeployment>(objects, 'Deployment')) {
        const name = d.metadata.name;
        const env = containerEnv(mainContainer(d), objects).env;
        if (!KAFKA_READERS.includes(name)) {
          assert.deepEqual(
            settings.filter((v) => env.has(v)),
            [],
            `${overlay.namespace} ${name}: no bus, no Kafka settings`,
          );
          continue;
        }
        assert.equal(envValue(env.get('KAFKA_SSL')), '', `${overlay.namespace} ${name}: KAFKA_SSL`);
        assert.equal(envValue(env.get('KAFKA_SASL_MECHANISM')), '', `${overlay.namespace} ${name}`);
        for (const [variable, key] of [
          ['KAFKA_SASL_USERNAME', 'sasl-username'],
          ['KAFKA_SASL_PASSWORD', 'sasl-password'],
        ] as const) {
          assert.deepEqual(env.get(variable), { from: 'secret', name: 'adsmcp-kafka', key }, variable);
          const ref = mainContainer(d).env?.find((e) => e.name === variable)?.valueFrom?.secretKeyRef;
          assert.equal(ref?.optional, true, `${name}: ${variable} must not need the Secret without SASL`);
        }
      }
    }
    const example = [...README.matchAll(/```yaml\n([\s\S]*?)```/g)]
      .map((m) => m[1] ?? '')
      .find((block) => block.includes('KAFKA_SASL_MECHANISM='));
    assert.ok(example !== undefined, 'the README shows how to set TLS and SASL in an overlay');
    const snippet = fields(parseAllDocuments(example, { version: '1.1' })[0]?.toJS(), 'the README example');
    const production = OVERLAYS.production as Overlay;
    const overlay = fields(readYaml(join(production.dir, 'kustomization.yaml'))[0], 'production');
    const dir = mkdtempSync(join(tmpdir(), 'kustomize-'));
    try {
      writeFileSync(
        join(dir, 'kustomization.yaml'),
        stringify({
          ...overlay,
          resources: list(overlay.resources, 'resources').map((r) => resolve(production.dir, String(r))),
          configMapGenerator: [
            ...list(overlay.configMapGenerator, 'configMapGenerator'),
            ...list(snippet.configMapGenerator, 'the README example'),
          ],
        }),
      );
      const objects = kustomize(dir);
      const mechanism = /KAFKA_SASL_MECHANISM=(\S+)/.exec(example)?.[1];
      for (const d of ofKind<IDeployment>(objects, 'Deployment')) {
        const env = containerEnv(mainContainer(d), objects).env;
        const reads = KAFKA_READERS.includes(d.metadata.name);
        assert.equal(envValue(env.get('KAFKA_SSL')), reads ? 'true' : undefined, d.metadata.name);
        assert.equal(
          envValue(env.get('KAFKA_SASL_MECHANISM')),
          reads ? mechanism : undefined,
          d.metadata.name,
        );
      }
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it('gives each process every variable its image runs with in the images end-to-end test, and only variables it reads', () => {
    const runtimeDir = join(ROOT, 'packages/runtime/src');
    const runtimeSources = readdirSync(runtimeDir, { recursive: true, encoding: 'utf8' })
      .filter((f) => f.endsWith('.ts') && !f.endsWith('.test.ts'))
      .map((f) => readFileSync(join(runtimeDir, f), 'utf8'))
      .join('\n');
    // What every process may read: the runtime's own variables (log level, bus, metrics, traces)
    // and Node's, which the images set.
    const everywhere = new Set([
      ...[...runtimeSources.matchAll(/env\.([A-Z][A-Z0-9_]+)/g)].map((m) => m[1]),
      ...[...runtimeSources.matchAll(/^\s+([A-Z][A-Z0-9_]+):\s*(?:str|int|optional)\(/gm)].map((m) => m[1]),
      'NODE_ENV',
      'NODE_OPTIONS',
    ]);
    const readsBy = new Map<string, Set<string | undefined>>();
    for (const name of Object.keys(SERVICES)) {
      const config = readFileSync(join(ROOT, 'services', name, 'src/config.ts'), 'utf8');
      readsBy.set(
        name,
        new Set([...everywhere, ...[...config.matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1])]),
      );
    }
    const readBySome = (v: string) => [...readsBy.values()].some((r) => r.has(v));
    const secrets = {} as StackSecrets;
    for (const overlay of Object.values(OVERLAYS)) {
      const objects = render(overlay);
      for (const d of ofKind<IDeployment>(objects, 'Deployment')) {
        const name = d.metadata.name as ServiceName;
        const env = containerEnv(mainContainer(d), objects).env;
        const set = [...env.keys()];
        const imageRuns = ['DATABASE_URL', 'HOST', 'PORT', ...Object.keys(serviceEnv(name, secrets, {}))];
        const where = `${overlay.namespace} ${name}`;
        assert.deepEqual(
          imageRuns.filter((v) => !set.includes(v)),
          [],
          `${where}: the manifest lacks variables the image is run with (packages/testkit/src/image-env.ts)`,
        );
        // A shared ConfigMap (the peers' URLs) may hold what another process reads; a variable
        // set for this process alone must be one it reads.
        const unread = set.filter(
          (v) => !readsBy.get(name)?.has(v) && !(env.get(v)?.from === 'configMap' && readBySome(v)),
        );
        assert.deepEqual(unread, [], `${where}: the manifest sets variables no process reads`);
      }
      const ports = ofKind<IDeployment>(objects, 'Deployment').map((d) => [
        d.metadata.name,
        mainContainer(d).ports?.[0]?.containerPort,
      ]);
      assert.deepEqual(
        ports,
        ports.map(([name]) => [name, IMAGE_PORT[name as ServiceName]]),
        'each image is built with the port its manifest runs it on',
      );
    }
  });

  it('documents in deploy/k8s/README.md every variable each process reads', () => {
    const runtime = readFileSync(join(ROOT, 'packages/runtime/src/config.ts'), 'utf8');
    const serviceConfig = runtime.slice(runtime.indexOf('export const serviceConfig'));
    const names = (source: string) => [...source.matchAll(/^\s+([A-Z][A-Z0-9_]+):/gm)].map((m) => m[1]);
    for (const service of Object.keys(SERVICES)) {
      const config = readFileSync(join(ROOT, 'services', service, 'src/config.ts'), 'utf8');
      const read = new Set([
        ...names(config),
        ...(config.includes('...serviceConfig') ? names(serviceConfig) : []),
      ]);
      assert.ok(read.size > 0, service);
      const missing = [...read].filter((name) => !README.includes(`\`${name}\``));
      assert.deepEqual(missing, [], `${service} reads variables deploy/k8s/README.md does not name`);
    }
  });
});

describe('the checks', () => {
  const dev = OVERLAYS.dev as Overlay;
  const production = OVERLAYS.production as Overlay;
  const deployment = (objects: KObject[], name: string) => find<IDeployment>(objects, 'Deployment', name);

  it('report a field of the wrong type', () => {
    const objects = render(dev);
    const port = mainContainer(deployment(objects, 'changes')).ports?.[0];
    assert.ok(port !== undefined);
    (port as { containerPort: unknown }).containerPort = '50051';
    assert.match(schemaProblems(objects).join('\n'), /Deployment changes: .*containerPort must be integer/);
  });

  it('report a misspelt field', () => {
    const objects = render(dev);
    const sc = mainContainer(deployment(objects, 'gateway')).securityContext as Record<string, unknown>;
    sc.readOnlyRootFileSystem = true;
    assert.match(
      unknownFieldProblems(objects).join('\n'),
      /Deployment gateway: .*'"?readOnlyRootFileSystem"?'/,
    );
  });

  it('report a replicated service without a disruption budget, and one that lets both replicas go', () => {
    const objects = render(production).filter(
      (o) => !(o.kind === 'PodDisruptionBudget' && o.metadata.name === 'changes'),
    );
    const budget = find<IPodDisruptionBudget>(objects, 'PodDisruptionBudget', 'marketing');
    budget.spec = { ...budget.spec, maxUnavailable: 2 };
    const problems = scalingProblems(objects, { autoscaled: true }).join('\n');
    assert.match(problems, /the changes has no PodDisruptionBudget/);
    assert.match(problems, /PodDisruptionBudget marketing: must let one pod go at a time/);
  });

  it('report a writable root filesystem, a root user, a missing probe and a missing limit', () => {
    const objects = render(production);
    const c = mainContainer(deployment(objects, 'marketing'));
    c.securityContext = { ...c.securityContext, readOnlyRootFilesystem: false, runAsUser: 0 };
    c.livenessProbe = undefined;
    c.resources = { requests: c.resources?.requests ?? {} };
    const problems = workloadProblems(objects).join('\n');
    for (const expected of [
      /readOnlyRootFilesystem/,
      /runAsUser/,
      /liveness probe/,
      /cpu request and limit/,
    ]) {
      assert.match(problems, expected);
    }
  });

  it('report an http probe on a gRPC service', () => {
    const objects = render(production);
    mainContainer(deployment(objects, 'optimizer')).readinessProbe = {
      httpGet: { path: '/healthz', port: 50051 },
    };
    assert.match(workloadProblems(objects).join('\n'), /optimizer: readiness probe must be grpc/);
  });

  it('report a secret given as a plain value or a whole Secret', () => {
    const objects = render(production);
    const c = mainContainer(deployment(objects, 'changes'));
    c.env = (c.env ?? []).map((e) =>
      e.name === 'DATABASE_URL' ? { name: e.name, value: 'postgres://u:p@db/x' } : e,
    );
    c.envFrom = [...(c.envFrom ?? []), { secretRef: { name: 'adsmcp-database' } }];
    const problems = envProblems(objects, README).join('\n');
    assert.match(problems, /DATABASE_URL is secret/);
    assert.match(problems, /takes a whole Secret by envFrom/);
  });

  it('report a Service whose selector matches no pods', () => {
    const objects = render(production);
    const s = find<IService>(objects, 'Service', 'upstream-proxy');
    s.spec = { ...s.spec, selector: { app: 'upstream' } };
    assert.match(serviceProblems(objects).join('\n'), /Service upstream-proxy: must select/);
  });

  it('report internet egress for another service', () => {
    const objects = render(production);
    const internet = find<INetworkPolicy>(objects, 'NetworkPolicy', 'allow-upstream-proxy-internet-egress');
    internet.spec = { ...internet.spec, podSelector: { matchLabels: { app: 'changes' } } };
    const problems = networkProblems(objects, flowsOf(production)).join('\n');
    assert.match(problems, /gives changes egress to an address block/);
    assert.match(problems, /changes -> 203\.0\.113\.10:443\/TCP must be denied/);
    assert.match(problems, /upstream-proxy -> 203\.0\.113\.10:443\/TCP must be allowed/);
  });

  it('report internet egress that reaches a private or metadata address', () => {
    const objects = render(production);
    const internet = find<INetworkPolicy>(objects, 'NetworkPolicy', 'allow-marketing-internet-egress');
    for (const rule of internet.spec?.egress ?? [])
      for (const peer of rule.to ?? []) if (peer.ipBlock !== undefined) peer.ipBlock.except = [];
    const problems = networkProblems(objects, flowsOf(production)).join('\n');
    assert.match(problems, /marketing -> 10\.20\.0\.7:443\/TCP must be denied/);
    assert.match(problems, /marketing -> 169\.254\.169\.254:443\/TCP must be denied/);
    assert.doesNotMatch(problems, /upstream-proxy ->/);
  });

  it('report a missing default deny', () => {
    const objects = render(production).filter((o) => o.metadata.name !== 'default-deny-all');
    assert.match(networkProblems(objects, flowsOf(production)).join('\n'), /no default-deny policy/);
  });

  it('report a gRPC service opened to callers other than the gateway', () => {
    const objects = render(dev);
    const ingress = find<INetworkPolicy>(objects, 'NetworkPolicy', 'allow-services-ingress-from-gateway');
    for (const rule of ingress.spec?.ingress ?? []) rule.from = undefined;
    const problems = networkProblems(objects, flowsOf(dev)).join('\n');
    assert.match(problems, /flows allowed that should not be: .*outside->changes:50051/);
    assert.match(problems, /outside->upstream-proxy:50051/);
  });

  it('report the sandbox, or a pointer to it, in production', () => {
    const objects = render(production);
    const cm = ofKind<IConfigMap>(objects, 'ConfigMap').find((m) => m.data?.UPSTREAM_URL !== undefined);
    assert.ok(cm?.data !== undefined);
    cm.data.UPSTREAM_URL = 'http://ads-sandbox:8080';
    assert.deepEqual(sandboxMentions(objects), [`ConfigMap ${cm.metadata.name}`]);
    const sandbox = render(dev)
      .filter((o) => o.metadata.name === 'ads-sandbox')
      .map(nameOf);
    assert.deepEqual(
      sandboxMentions(render(dev)).filter((m) => sandbox.includes(m)),
      sandbox,
    );
  });
});

describe('the renderer', () => {
  const withKustomization = (body: string, fn: (dir: string) => void) => {
    const dir = mkdtempSync(join(tmpdir(), 'kustomize-'));
    try {
      mkdirSync(dir, { recursive: true });
      writeFileSync(join(dir, 'kustomization.yaml'), body);
      fn(dir);
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  };

  it('refuses a kustomization field it does not implement', () => {
    withKustomization(
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\ncommonLabels:\n  a: b\n',
      (dir) => assert.throws(() => kustomize(dir), /"commonLabels" is not implemented/),
    );
  });

  it('refuses labels that would rewrite selectors', () => {
    withKustomization(
      'apiVersion: kustomize.config.k8s.io/v1beta1\nkind: Kustomization\nlabels:\n  - pairs: {a: b}\n    includeSelectors: true\n',
      (dir) => assert.throws(() => kustomize(dir), /includeSelectors is not modelled/),
    );
  });

  it('names generated ConfigMaps by content and points the pods at the new name', () => {
    const objects = render(OVERLAYS.production as Overlay);
    const names = ofKind<IConfigMap>(objects, 'ConfigMap').map((m) => m.metadata.name);
    assert.ok(
      names.every((n) => /-[a-z0-9]{10}$/.test(n)),
      names.join(', '),
    );
    const refs = ofKind<IDeployment>(objects, 'Deployment').flatMap((d) =>
      (mainContainer(d).envFrom ?? []).map((f) => f.configMapRef?.name),
    );
    assert.ok(refs.length > 0 && refs.every((r) => r !== undefined && names.includes(r)), refs.join(', '));
  });
});

describe('the Dockerfile', () => {
  const ignore = readFileSync(join(ROOT, '.dockerignore'), 'utf8').split('\n');
  const dockerfile = readFileSync(join(ROOT, 'Dockerfile'), 'utf8');
  const final = dockerfile.slice(dockerfile.lastIndexOf('\nFROM '));

  it('builds any service on a pinned Node 20 base, as the node user, with only its bundle, migrations and packages', () => {
    const base = /^ARG NODE_IMAGE=(\S+)$/m.exec(dockerfile)?.[1] ?? '';
    assert.match(base, /^node:20\.\d+\.\d+-bookworm-slim$/, 'the base image is pinned to a Node 20 release');
    const froms = [...dockerfile.matchAll(/^FROM (\S+)/gm)].map((m) => m[1]);
    assert.ok(
      froms.length >= 2 && froms.every((f) => /^\$\{NODE_IMAGE\}$/.test(f ?? '')),
      'every stage starts from NODE_IMAGE',
    );
    assert.match(final, new RegExp(`^USER ${NODE_UID}(:${NODE_UID})?$`, 'm'), 'runs as the node user');
    assert.match(final, /^ARG SERVICE$/m);
    assert.match(final, /^EXPOSE \$\{PORT\}$/m);
    assert.match(final, /^ENV [\s\S]*PORT=\$\{PORT\}/m);
    // Node's own flags may come before the bundle (the V8 heap bounds: node-flags.test.ts).
    assert.match(final, /^CMD \["node", (?:"--[^"]+", )*"service\/dist\/main\.js"\]$/m, 'runs the bundle');
    for (const dir of ['dist', 'migrations']) {
      assert.ok(final.includes(`/app/services/\${SERVICE}/${dir}/ service/${dir}/`), `copies ${dir}`);
    }
    assert.ok(final.includes('COPY --from=deps /app/node_modules/ node_modules/'), 'copies its packages');
    assert.ok(
      dockerfile.includes(
        `npm ci --omit=dev --ignore-scripts --no-audit --no-fund --workspace "@adsmcp/\${SERVICE}"`,
      ),
      "installs the service's production packages only",
    );
  });

  for (const [name, expected] of Object.entries(SERVICES)) {
    it(`has what the image of ${name} copies, and the port its manifest uses is the one its build is told`, () => {
      for (const path of ['package.json', 'src/main.ts', 'migrations']) {
        assert.ok(existsSync(join(ROOT, 'services', name, path)), `services/${name}/${path}`);
      }
      const readme = readFileSync(join(ROOT, 'deploy/k8s/README.md'), 'utf8');
      const buildLine =
        expected.port === 50051 ? '--build-arg SERVICE=$s' : `--build-arg PORT=${expected.port}`;
      assert.ok(readme.includes(buildLine), `the README builds ${name} with ${buildLine}`);
    });
  }

  it('keep dev data, installed modules and build output out of the build context', () => {
    for (const entry of ['.git', '.data', '**/node_modules', '**/dist', '**/.env'])
      assert.ok(ignore.includes(entry), entry);
  });
});
