// For the knex CLI (`npx knex --knexfile db/knexfile.ts migrate:status`) against DATABASE_URL.
// Herald itself runs the same migrations on start (db/database.ts); this file is for operators.
import { migrationSource } from './migrations';

const config = {
  client: 'pg',
  connection: process.env.DATABASE_URL,
  migrations: { migrationSource, tableName: 'knex_migrations' },
};

export default config;
