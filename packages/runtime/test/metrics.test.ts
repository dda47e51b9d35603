/** The metrics endpoint: off unless METRICS_PORT is set, a clear error for a bad value, /metrics only. */
import assert from 'node:assert/strict';
import { test } from 'node:test';
import { ConfigError } from '../src/config.ts';
import { createLogger } from '../src/log.ts';
import { Counter, metricsPort, registry, startMetrics } from '../src/metrics.ts';

const logger = createLogger('test', 'silent');

test('METRICS_PORT unset serves nothing; a malformed one is refused naming the variable and the rule', () => {
  assert.equal(metricsPort({}), undefined);
  assert.equal(metricsPort({ METRICS_PORT: '' }), undefined);
  assert.equal(metricsPort({ METRICS_PORT: '9464' }), 9464);
  for (const bad of ['http', '-1', '70000', '1.5']) {
    assert.throws(
      () => metricsPort({ METRICS_PORT: bad }),
      (err: unknown) =>
        err instanceof ConfigError && /METRICS_PORT must be an integer from 0 to 65535/.test(err.message),
    );
  }
});

test('GET /metrics serves the registry in the Prometheus format, labelled with the service', async () => {
  const metrics = await startMetrics('unit', { host: '127.0.0.1', logger, env: { METRICS_PORT: '0' } });
  try {
    const counter = new Counter({ name: 'unit_things_total', help: 'Things.', registers: [registry] });
    counter.inc(3);
    const res = await fetch(`http://127.0.0.1:${metrics.port}/metrics`);
    assert.equal(res.status, 200);
    assert.match(res.headers.get('content-type') ?? '', /^text\/plain/);
    const text = await res.text();
    assert.match(text, /^unit_things_total\{service="unit"\} 3$/m);
    assert.match(text, /^process_cpu_user_seconds_total\{service="unit"\} /m, 'default process metrics');
    const other = await fetch(`http://127.0.0.1:${metrics.port}/`);
    assert.equal(other.status, 404);
  } finally {
    await metrics.close();
  }
});
