import pg from 'pg';
import { dbosSystemDatabaseUrl } from '../engine/embedded';
import { readClusterInfo } from './support/cluster';

// DBOS 5.3.0 sets idle_in_transaction_session_timeout with a query it pipelines ahead of the borrower's first one
// (pg's concurrent client.query() warning) unless the URL's startup options set it; engine/embedded.ts does.
describe('the system database URL given to DBOS', () => {
  test('adds the timeout to the startup options, keeping other parameters and options', () => {
    const plain = new URL(dbosSystemDatabaseUrl('postgres://u:p@db:5432/herald?sslmode=disable'));
    expect(plain.searchParams.get('sslmode')).toBe('disable');
    expect(plain.searchParams.get('options')).toBe('-c idle_in_transaction_session_timeout=60000');
    const withOptions = new URL(dbosSystemDatabaseUrl('postgres://db/herald?options=-c%20statement_timeout%3D5000'));
    expect(withOptions.searchParams.get('options')).toBe('-c statement_timeout=5000 -c idle_in_transaction_session_timeout=60000');
  });

  test("leaves a URL that sets the timeout itself as it is", () => {
    const url = 'postgres://db/herald?options=-c%20idle_in_transaction_session_timeout%3D5000';
    expect(dbosSystemDatabaseUrl(url)).toBe(url);
  });

  test('a connection made with it has the timeout from the start', async () => {
    const client = new pg.Client({ connectionString: dbosSystemDatabaseUrl(readClusterInfo().adminUrl) });
    await client.connect();
    try {
      expect((await client.query('SHOW idle_in_transaction_session_timeout')).rows[0].idle_in_transaction_session_timeout).toBe('1min');
    } finally {
      await client.end();
    }
  });
});
