import { OPERATOR } from '../audit/log';
import { Command, CommanderError, Option } from 'commander';
import Joi from 'joi';
import { Model } from 'objection';
import { DomainError } from '../core/errors';
import { isUuid, normaliseEmail } from '../core/values';
import { ConfigError, loadConfig, returnPathOf, type Config } from '../config';
import { loadSecret } from '../config/secret';
import { openDatabase, type Database } from '../db/database';
import { markOperatorVerified } from '../db/queries/domains';
import { ensureDomainKey } from '../domains/rows';
import { createLogger } from '../logging/logger';
import { domainRecords } from '../domains/records';
import { createKey, createProject, listProjects, revokeKey, setProjectDisabled } from '../projects/service';
import { addDomain } from '../domains/rows';
import { createInvitation } from '../people/invitations';
import { createResetLink } from '../people/resets';
import { disableTwoFactor } from '../people/twoFactor';
import { findUserByEmail, listUsers } from '../people/users';
import { ROLES, type Role } from '../projects/roles';

/** A failure the operator caused: printed as one line on stderr, exit code 1. */
class CliError extends Error {}

const domainName = Joi.string().trim().lowercase().domain({ tlds: { allow: false } }).max(253);

function requireUuid(id: string, what: string): string {
  if (!isUuid(id)) throw new CliError(`${what} ${JSON.stringify(id)} is not an id (expected a UUID)`);
  return id;
}

/** Where the CLI writes: process.stdout/stderr, or a test's capture (only `write` is needed; the rest is read when present). */
export interface CliStream {
  write(s: string): unknown;
  isTTY?: boolean;
  columns?: number;
  hasColors?(): boolean;
}

/** The CLI's surroundings: bin/cli.ts passes the process's; the tests run it in-process with their own. */
export interface CliIo {
  env: NodeJS.ProcessEnv;
  stdout: CliStream;
  stderr: CliStream;
}

/** Commander's own colour rule (its useColor and TTY check), read from the injected env and stream instead of the process's. */
function hasColors(env: NodeJS.ProcessEnv, stream: CliStream): boolean {
  if (env.NO_COLOR || env.FORCE_COLOR === '0' || env.FORCE_COLOR === 'false') return false;
  if (env.FORCE_COLOR || env.CLICOLOR_FORCE !== undefined) return true;
  return stream.isTTY === true && stream.hasColors?.() === true;
}

/**
 * The operator CLI. Every command opens the configured database the same way the server does: DATABASE_URL,
 * or the embedded cluster under DATA_DIR — attached if a Herald server already runs it, started (and stopped
 * again) otherwise. Output is JSON on stdout; diagnostics go to stderr.
 */
export async function runCli(argv: string[], io: CliIo = { env: process.env, stdout: process.stdout, stderr: process.stderr }): Promise<number> {
  let db: Database | undefined;
  let config: Config | undefined;
  // openDatabase binds Objection's models to its knex, which is destroyed below: an in-process caller (the tests) gets
  // its own binding back.
  const boundBefore = Model.knex();
  const print = (value: unknown): void => { io.stdout.write(`${JSON.stringify(value, null, 2)}\n`); };
  const withDb = <A extends unknown[]>(fn: (...args: A) => Promise<void>) => async (...args: A) => {
    config = loadConfig(io.env);
    // Logs go to stderr so that stdout carries only the command's JSON: fd 2, written synchronously, for the process's
    // own (nothing lost at process.exit), else to the injected stream, so that an in-process run captures them too.
    const log = createLogger(io.env.LOG_LEVEL ? config.logLevel : 'warn', 'herald-cli', io.stderr === process.stderr ? 2 : io.stderr);
    db = await openDatabase(config, log);
    await fn(...args);
  };

  const peopleDeps = () => ({ knex: db!.knex, publicUrl: config!.publicUrl, invitationTtlHours: config!.people.invitationTtlHours });

  const program = new Command('herald')
    .description('Herald operator CLI')
    .exitOverride()
    // All of commander's output (--help, usage errors) and what it reads to lay it out go through io as well.
    .configureOutput({
      writeOut: (s) => { io.stdout.write(s); },
      writeErr: (s) => { io.stderr.write(s); },
      // 80 is what commander falls back to when the stream is no terminal.
      getOutHelpWidth: () => (io.stdout.isTTY && io.stdout.columns) || 80,
      getErrHelpWidth: () => (io.stderr.isTTY && io.stderr.columns) || 80,
      getOutHasColors: () => hasColors(io.env, io.stdout),
      getErrHasColors: () => hasColors(io.env, io.stderr),
    });

  const project = program.command('project').description('manage projects');
  project.command('create').description('create a project with a secret and a public key (printed once)')
    .requiredOption('--name <name>', 'project name')
    .action(withDb(async (opts: { name: string }) => {
      const name = opts.name.trim();
      if (!name || name.length > 200) throw new CliError('--name must be 1 to 200 characters');
      print(await createProject(name));
    }));
  project.command('list').description('list projects and their keys (hints only)')
    .action(withDb(async () => print(await listProjects())));
  for (const [cmd, disabled] of [['disable', true], ['enable', false]] as const) {
    project.command(`${cmd} <id>`).description(`${cmd} a project (a disabled project's keys get 403 PROJECT_DISABLED)`)
      .action(withDb(async (id: string) => {
        if (!(await setProjectDisabled(requireUuid(id, 'project'), disabled))) throw new CliError(`no project ${id}`);
        print({ id, disabled });
      }));
  }

  const key = program.command('key').description('manage API keys');
  key.command('create').description('create an API key for a project (printed once)')
    .requiredOption('--project <id>', 'project id')
    .addOption(new Option('--type <type>', 'key type').choices(['secret', 'public']).default('secret'))
    .option('--name <name>', 'what the key is for (GET /keys shows it); default: named for its type')
    .addOption(new Option('--scope <scope>', 'full, or sending: the sending routes and SMTP submission only').choices(['full', 'sending']).default('full'))
    .option('--domains <list>', 'comma-separated sending domains the key may send From (and their subdomains); default: any')
    .action(withDb(async (opts: { project: string; type: 'secret' | 'public'; name?: string; scope: 'full' | 'sending'; domains?: string }) => {
      const name = opts.name?.trim();
      if (name !== undefined && (!name || name.length > 200)) throw new CliError('--name must be 1 to 200 characters');
      const domains = opts.domains?.split(',').map((d) => d.trim()).filter(Boolean).map((d) => {
        const { value, error } = domainName.validate(d);
        if (error) throw new CliError(`--domains: ${JSON.stringify(d)} is not a domain name`);
        return value as string;
      });
      const created = await createKey(requireUuid(opts.project, 'project'), opts.type, { name, scope: opts.scope, domains: domains?.length ? domains : null });
      if (!created) throw new CliError(`no project ${opts.project}`);
      print(created);
    }));
  key.command('revoke <keyId>').description('revoke an API key by its id')
    .action(withDb(async (keyId: string) => {
      if (!(await revokeKey(requireUuid(keyId, 'key')))) throw new CliError(`no active key ${keyId}`);
      print({ id: keyId, revoked: true });
    }));

  const domain = program.command('domain').description('manage sending domains');
  domain.command('add').description('add a sending domain to a project (with its DKIM key; prints the DNS records to publish)')
    .requiredOption('--project <id>', 'project id')
    .requiredOption('--domain <name>', 'domain name, e.g. mail.example.com')
    .option('--verified', 'record it as verified by the operator, without a DNS check')
    .action(withDb(async (opts: { project: string; domain: string; verified?: boolean }) => {
      const { value: name, error } = domainName.validate(opts.domain);
      if (error) throw new CliError(`--domain ${JSON.stringify(opts.domain)} is not a valid domain name`);
      const added = await addDomain(requireUuid(opts.project, 'project'), name, opts.verified === true);
      if (!added) throw new CliError(`no project ${opts.project}`);
      // Only this command needs the secret (it encrypts the DKIM key): others must not create DATA_DIR/secret.key.
      let row = await ensureDomainKey(db!.knex, loadSecret(config!), added);
      if (opts.verified) row = await markOperatorVerified(db!.knex, row);
      print({
        id: row.id, projectId: row.projectId, domain: row.domain, status: row.status, verifiedAt: row.verifiedAt?.toISOString() ?? null,
        records: domainRecords(row.domain, row.dkimSelector!, row.dkimPublicKey!, row.records ?? {}, returnPathOf(config!)),
      });
    }));

  const user = program.command('user').description('manage people: invitations, password resets, accounts');
  user.command('add').description('invite someone to a project with a role: prints the invitation link (never mailed)')
    .requiredOption('--email <address>', 'their email address')
    .requiredOption('--project <id>', 'project id')
    .addOption(new Option('--role <role>', 'their role in the project').choices([...ROLES]).makeOptionMandatory())
    .action(withDb(async (opts: { email: string; project: string; role: Role }) => {
      if (!normaliseEmail(opts.email)) throw new CliError(`--email ${JSON.stringify(opts.email)} is not a valid email address`);
      // The operator stands above projects: any role may be granted, owner included.
      const invited = await createInvitation(peopleDeps(), requireUuid(opts.project, 'project'), { email: opts.email, role: opts.role }, { role: 'owner', actor: OPERATOR }, { mail: false });
      print({ id: invited.id, projectId: opts.project.toLowerCase(), email: invited.email, role: invited.role, expiresAt: invited.expiresAt.toISOString(), link: invited.link });
    }));
  user.command('reset').description("print a one-hour link that sets a new password for an account (and ends its sessions)")
    .requiredOption('--email <address>', "the account's email address")
    .action(withDb(async (opts: { email: string }) => {
      const reset = await createResetLink(peopleDeps(), opts.email).catch((err: unknown) => {
        throw err instanceof DomainError && err.kind === 'not_found' ? new CliError(`no account with the address ${JSON.stringify(opts.email)}`) : err;
      });
      print({ email: reset.email, expiresAt: reset.expiresAt.toISOString(), link: reset.link });
    }));
  user.command('two-factor-off').description('turn off the two-factor of an account that lost its device and its recovery codes')
    .requiredOption('--email <address>', "the account's email address")
    .action(withDb(async (opts: { email: string }) => {
      const found = await findUserByEmail(db!.knex, opts.email);
      if (!found) throw new CliError(`no account with the address ${JSON.stringify(opts.email)}`);
      // The operator vouches for the person (as for a reset link): the next login asks for the password alone.
      print({ email: found.email, twoFactorWasOn: await disableTwoFactor(db!.knex, found.id) });
    }));
  user.command('list').description('list accounts and their projects and roles')
    .action(withDb(async () => print((await listUsers(db!.knex)).map((u) => ({ ...u, createdAt: u.createdAt.toISOString() })))));

  try {
    await program.parseAsync(argv);
    return 0;
  } catch (err) {
    if (err instanceof CommanderError) return err.exitCode === 0 ? 0 : 2; // commander already printed the message
    if (err instanceof CliError || err instanceof ConfigError) {
      io.stderr.write(`error: ${err.message}\n`);
      return 1;
    }
    io.stderr.write(`error: ${(err as Error).message}\n`);
    return 1;
  } finally {
    if (db) Model.knex(boundBefore);
    await db?.close();
  }
}
