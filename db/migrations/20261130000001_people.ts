import type { Knex } from 'knex';

/**
 * People (issue 27): accounts, their memberships of projects with a role, their sessions, and the single-use tokens
 * that invite someone, reset a password or create the first operator. Tokens and session ids are stored only as the
 * SHA-256 of what the person holds (random and long: a fast hash is right, as for API keys, projects/keys.ts).
 * Passwords are argon2id hashes (people/passwords.ts).
 */
export async function up(knex: Knex): Promise<void> {
  await knex.raw(`CREATE TABLE users (
    id uuid PRIMARY KEY DEFAULT herald_uuidv7(),
    -- Lower-cased (core/values.ts normaliseEmail); serves login and invitations: WHERE email = ?
    email text NOT NULL CONSTRAINT users_email_key UNIQUE,
    name text NOT NULL DEFAULT '',
    -- argon2id (PHC string); NULL for an account that signs in only through single sign-on.
    password_hash text,
    -- An operator of the instance: creates, enables and disables projects, and sees them all.
    operator boolean NOT NULL DEFAULT false,
    disabled boolean NOT NULL DEFAULT false,
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now()
  )`);

  await knex.raw(`CREATE TABLE memberships (
    project_id uuid NOT NULL REFERENCES projects (id) ON DELETE CASCADE,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    role text NOT NULL CONSTRAINT memberships_role_check CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    created_at timestamptz NOT NULL DEFAULT now(),
    updated_at timestamptz NOT NULL DEFAULT now(),
    -- Serves the membership check of every session request (project, user) and the project's member list.
    CONSTRAINT memberships_pkey PRIMARY KEY (project_id, user_id)
  )`);
  // Serves a user's projects (GET /auth/session) and the cascade from users.
  await knex.raw('CREATE INDEX memberships_user_idx ON memberships (user_id, project_id)');

  await knex.raw(`CREATE TABLE sessions (
    id uuid PRIMARY KEY DEFAULT herald_uuidv7(),
    -- SHA-256 of the cookie's token; serves every session request: WHERE token_hash = ?
    token_hash bytea NOT NULL CONSTRAINT sessions_token_hash_key UNIQUE,
    user_id uuid NOT NULL REFERENCES users (id) ON DELETE CASCADE,
    created_at timestamptz NOT NULL DEFAULT now(),
    -- Idle expiry counts from here; moved at most once a minute, not at every request.
    last_seen_at timestamptz NOT NULL DEFAULT now(),
    -- The absolute expiry, set at login.
    expires_at timestamptz NOT NULL,
    ended_at timestamptz,
    address text,
    user_agent text
  )`);
  // Serves a user's session list and the cascade from users.
  await knex.raw('CREATE INDEX sessions_user_idx ON sessions (user_id, id)');

  await knex.raw(`CREATE TABLE auth_tokens (
    id uuid PRIMARY KEY DEFAULT herald_uuidv7(),
    kind text NOT NULL CONSTRAINT auth_tokens_kind_check CHECK (kind IN ('invitation', 'password_reset', 'setup')),
    -- SHA-256 of the token in the link; serves its use: WHERE token_hash = ?
    token_hash bytea NOT NULL CONSTRAINT auth_tokens_token_hash_key UNIQUE,
    -- An invitation: to this project, this address, with this role.
    project_id uuid REFERENCES projects (id) ON DELETE CASCADE,
    email text,
    role text CONSTRAINT auth_tokens_role_check CHECK (role IN ('owner', 'admin', 'member', 'viewer')),
    -- A password reset: this user's.
    user_id uuid REFERENCES users (id) ON DELETE CASCADE,
    -- Who made it (an invitation's inviter); NULL for the CLI and the first start.
    created_by uuid REFERENCES users (id) ON DELETE SET NULL,
    created_at timestamptz NOT NULL DEFAULT now(),
    expires_at timestamptz NOT NULL,
    used_at timestamptz
  )`);
  // Serves a project's pending invitations.
  await knex.raw('CREATE INDEX auth_tokens_project_idx ON auth_tokens (project_id, id) WHERE project_id IS NOT NULL');
  // Serves the cascade from users.
  await knex.raw('CREATE INDEX auth_tokens_user_idx ON auth_tokens (user_id) WHERE user_id IS NOT NULL');
  await knex.raw('CREATE INDEX auth_tokens_created_by_idx ON auth_tokens (created_by) WHERE created_by IS NOT NULL');
}

export async function down(knex: Knex): Promise<void> {
  for (const table of ['auth_tokens', 'sessions', 'memberships', 'users']) await knex.raw(`DROP TABLE IF EXISTS ${table}`);
}
