/**
 * The integration suites that meet PostgreSQL directly, again against PostgreSQL in a container
 * (Testcontainers; see docs/testing.md): the bus on its Postgres transport (the bus contract and
 * what only that transport does) and the migrations. The suites are the same files as
 * bus-pg.test.ts and db.test.ts; only the server differs.
 */
import { after } from 'node:test';
import { startPgContainer } from '@adsmcp/testkit/pg-container';

const pg = await startPgContainer();
// Every database the suites create (testkit/postgres) is made on this server.
process.env.DATABASE_URL = pg.adminUrl;

await import('./bus-pg.test.ts');
await import('./db.test.ts');

// Registered after the suites' own hooks, so it runs after they have dropped their databases.
after(() => pg.stop());
