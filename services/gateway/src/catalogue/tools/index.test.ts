import assert from 'node:assert/strict';
import { test } from 'node:test';
import { buildCatalogue, pathParameters, type ToolRow } from '../catalogue.ts';
import { GATEWAY_ROUTE_SHAPES, prepareRequest, runRoute, upstreamReadRequest } from '../route-runner.ts';
import { argumentsOf, requestFrom } from '../rpc-mapping.ts';
import { type JsonSchema, validate } from '../schema.ts';
import { allTools, gatewayCatalogue } from './index.ts';

/** The arguments a path names, read back from the path the template made. */
function pathArguments(template: string, path: string): Record<string, string> {
  const names = pathParameters(template);
  const pattern = new RegExp(`^${template.replace(/\{[a-z_]+\}/g, '([^/]+)')}$`);
  const m = pattern.exec(path);
  assert.ok(m, `${path} does not fit ${template}`);
  return Object.fromEntries(names.map((n, i) => [n, decodeURIComponent(m[i + 1] as string)]));
}

/** The arguments an upstream read's query carries, typed as the tool's input schema says. */
function queryArguments(
  tool: ToolRow<unknown>,
  query: Record<string, string | number | readonly string[]>,
): Record<string, unknown> {
  const props = (tool.input.json as { properties: Record<string, JsonSchema> }).properties;
  const out: Record<string, unknown> = {};
  for (const [k, v] of Object.entries(query)) {
    const type = props[k]?.type;
    out[k] = type === 'array' ? [...(v as string[])] : type === 'integer' ? Number(v) : v;
  }
  return out;
}

/**
 * The arguments read back from a request, typed as the tool's input schema says: the proto JSON
 * mapping writes a 64-bit integer (micros, a revision) as a decimal string, exact.
 */
function asIntegers(tool: ToolRow<unknown>, args: Record<string, unknown>): Record<string, unknown> {
  const props = (tool.input.json as { properties: Record<string, JsonSchema> }).properties;
  return Object.fromEntries(
    Object.entries(args).map(([k, v]) => [
      k,
      props[k]?.type === 'integer' && typeof v === 'string' ? Number(v) : v,
    ]),
  );
}

/** The arguments the request a route makes carries, read back from that request. */
function roundTrip(tool: ToolRow<unknown>): Record<string, unknown> | undefined {
  const r = tool.route;
  const example = tool.example;
  switch (r.kind) {
    case 'rpc':
      return asIntegers(tool, argumentsOf(r.method.input, requestFrom(r.method.input, example)));
    case 'upstream-read': {
      const read = upstreamReadRequest(r, example);
      assert.equal(read.method, r.method ?? 'GET');
      // A POST read carries its body argument as the JSON body; a GET has none.
      assert.equal(read.body === undefined, r.body === undefined);
      return {
        account_id: read.accountId,
        ...pathArguments(r.path, read.path),
        ...queryArguments(tool, read.query),
        ...(r.body === undefined ? {} : { [r.body]: JSON.parse(read.body ?? '') as unknown }),
      };
    }
    case 'prepare': {
      const req = prepareRequest(r, tool.name, example);
      assert.equal(req.tool, tool.name);
      assert.equal(req.objectType, r.object);
      assert.equal(req.effect, r.effect);
      const target = r.target === undefined ? {} : pathArguments(r.target, req.targetPath ?? '');
      const op = pathArguments(r.operation.path, req.operation?.path ?? '');
      const body = JSON.parse(req.operation?.bodyJson ?? '') as unknown;
      if (r.body === undefined) assert.deepEqual(body, {});
      return {
        account_id: req.accountId,
        ...target,
        ...op,
        ...(r.body === undefined ? {} : { [r.body]: body }),
      };
    }
    case 'run':
      return undefined;
  }
}

test('every tool has valid example arguments, and every routed tool carries them unchanged into its request', () => {
  let routed = 0;
  for (const tool of allTools as readonly ToolRow<unknown>[]) {
    assert.deepEqual(validate(tool.input, tool.example), [], `${tool.name}: its example is not valid input`);
    const back = roundTrip(tool);
    if (back === undefined) continue;
    routed++;
    assert.deepEqual(back, tool.example, `${tool.name}: arguments changed on the way`);
  }
  // Every kind of route is exercised, not just one.
  const kinds = new Set(allTools.map((t) => t.route.kind));
  assert.deepEqual([...kinds].sort(), ['prepare', 'rpc', 'run', 'upstream-read']);
  // A read the platform takes as a POST with a body is exercised too.
  assert.ok(allTools.some((t) => t.route.kind === 'upstream-read' && t.route.method === 'POST'));
  // Ten tools have hand-written routes (run), each saying why.
  assert.ok(routed >= allTools.length - 10, `only ${routed} of ${allTools.length} tools are routed`);
});

test('a hand-written route says why it is needed', () => {
  for (const tool of allTools) {
    if (tool.route.kind === 'run') assert.ok(tool.route.why.length > 20, `${tool.name} does not say why`);
  }
});

test('the catalogue resolves every row: path parameters are required arguments and every tool has a result shape', () => {
  const catalogue = gatewayCatalogue();
  assert.equal(catalogue.listing.length, allTools.length);
  for (const t of catalogue.listing) {
    assert.equal(t.outputSchema.type, 'object', `${t.name}: its output schema must be an object schema`);
  }
});

test('tool names are unique, snake_case and prefixed ads_', () => {
  const names = allTools.map((t) => t.name);
  assert.equal(new Set(names).size, names.length);
  for (const n of names) assert.match(n, /^ads_[a-z][a-z0-9_]*$/);
});

test('an upstream read has a body argument exactly when it is a POST, checked at start-up', () => {
  const report = allTools.find((t) => t.name === 'ads_post_conversion_insights');
  assert.ok(report !== undefined && report.route.kind === 'upstream-read');
  const { body: _body, ...withoutBody } = report.route;
  const { method: _method, ...withoutMethod } = report.route;
  for (const route of [withoutBody, withoutMethod]) {
    assert.throws(
      () => buildCatalogue([{ ...report, route }], GATEWAY_ROUTE_SHAPES, runRoute),
      /an upstream read has a body argument exactly when it is a POST/,
    );
  }
  const listed = buildCatalogue([report], GATEWAY_ROUTE_SHAPES, runRoute);
  assert.equal(
    listed.byName.get(report.name)?.routesTo,
    'upstream.v1.UpstreamService/Call POST /conversions/insights',
  );
});
