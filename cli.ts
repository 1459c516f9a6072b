import path from 'node:path'
import { parseArgs } from 'node:util'
import type { TSchema } from '@sinclair/typebox'
import type { ValidateFunction } from 'ajv'
import { loadConfig, type Config } from './lib/config'
import { stderrPriority } from './lib/log-destination'
import type { Sql } from './db/client'
import { buildValidator } from './plugins/validation'
import { Email, Password, UserName } from './routes/auth/schemas'
import { hashPassword } from './lib/passwords'

/** The password jobs of the command line, which runs one at a time. */
const COMMAND_LINE = 'command-line'
import { StrictObject } from './lib/schemas'
import { plainArchive, type ArchiveSource } from './db/backup/archive'
import { writeBackup } from './db/backup/backup'
import { openDatabase } from './db/backup/database'
import { isEncrypted, MIN_PASSPHRASE, openEncrypted, sealer } from './db/backup/encryption'
import { megabytes, plural, stderrProgress } from './db/backup/progress'
import { restoreBackup } from './db/backup/restore'
import { backupTarget, pruneBackups } from './db/backup/target'
import { migrate } from './db/migrate'
import { revokeUserSessions } from './sql/sessions'
import { emailTaken, findCredentials, insertUser, setPasswordHash } from './sql/users'
import { containWriteAfterClose } from './db/write-after-close'
import { ArchiveProblem, importArchive } from './routes/families/import'

/**
 * The admin command line: accounts, migrations, backup and restore, with the
 * server's own configuration. A failure is one line on stderr and a non-zero
 * exit (2 for a usage error).
 */

const USAGE = `usage: npm run cli -- <command> [options]   (or: node dist/cli.js <command> [options])

  create-admin --email <e-mail> --name <name> [--password-stdin]
                      create an administrator account
  reset-password --email <e-mail> [--password-stdin]
                      set a user's password and sign out every session of theirs
  migrate             apply pending schema migrations
  backup --out <file or folder> [--keep <n>] [--encrypt]
                      write a backup archive; into a folder (an existing one, or a name ending
                      with / or given with --keep, made if missing), one per run, keeping the newest n;
                      --encrypt: encrypt it with a passphrase (AES-256-GCM), named .tar.enc in a folder
  restore --in <file> [--replace]
                      restore a backup into an empty instance (--replace: replace everything in it);
                      an encrypted backup asks for its passphrase
  import --in <file> --owner <e-mail>
                      import a family archive (GET /api/families/:id/export) as a new family of that user

The password is read from standard input with --password-stdin (typed twice,
without echo, on a terminal) or from CHILD_HEALTH_PASSWORD. A backup's
passphrase is read from standard input (typed without echo on a terminal,
twice for a new backup) and has at least ${MIN_PASSPHRASE} characters. Backups hold
password hashes and sessions: keep them encrypted or in a private place.
Every other setting comes from the environment, as for the server.`

class UsageError extends Error {}

type Values = Record<string, string | boolean | undefined>

interface Command {
  options: Record<string, { type: 'string' | 'boolean' }>
  run: (values: Values, config: Config) => Promise<string>
}

// Under systemd (the backup timer), warnings and failures reach the journal at their own priority.
const log = {
  info: (msg: string) => process.stderr.write(`${msg}\n`),
  debug: () => {},
  warn: (msg: string) => process.stderr.write(`${stderrPriority(4)}${msg}\n`)
}

const PASSWORD_ENV = 'CHILD_HEALTH_PASSWORD'
const MAX_STDIN_BYTES = 4096

/** Reads one line from the terminal without echoing it. */
function promptHidden (question: string): Promise<string> {
  const input = process.stdin
  return new Promise((resolve, reject) => {
    let answer = ''
    const finish = (error?: Error): void => {
      input.setRawMode(false)
      input.pause()
      input.off('data', onData)
      process.stderr.write('\n')
      if (error === undefined) resolve(answer)
      else reject(error)
    }
    const onData = (text: string): void => {
      for (const char of text) {
        if (char === '\r' || char === '\n') return finish()
        if (char === '\u0003' || char === '\u0004') return finish(new Error('cancelled'))
        answer = char === '\u007f' || char === '\b' ? [...answer].slice(0, -1).join('') : answer + char
      }
    }
    input.setRawMode(true)
    input.setEncoding('utf8')
    input.on('data', onData)
    input.resume()
    process.stderr.write(question)
  })
}

async function readStdin (what: string): Promise<string> {
  const chunks: Buffer[] = []
  let size = 0
  for await (const chunk of process.stdin) {
    size += chunk.length
    if (size > MAX_STDIN_BYTES) throw new UsageError(`the ${what} on standard input is too long`)
    chunks.push(chunk)
  }
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '')
}

/** A password never comes from the command line, where other users could read it. */
async function readPassword (fromStdin: boolean): Promise<string> {
  if (fromStdin && process.stdin.isTTY) {
    const password = await promptHidden('Password: ')
    if (await promptHidden('Repeat it: ') !== password) throw new UsageError('the two passwords differ')
    return password
  }
  if (fromStdin) return readStdin('password')
  const fromEnv = process.env[PASSWORD_ENV]
  if (fromEnv !== undefined && fromEnv !== '') return fromEnv
  throw new UsageError(`give the password on standard input with --password-stdin, or in ${PASSWORD_ENV}`)
}

/**
 * A backup's passphrase, from standard input: all of it, less one line break
 * at the end. On a terminal it is typed without echo, twice for a new backup.
 */
async function readPassphrase (forNewBackup: boolean): Promise<string> {
  let passphrase: string
  if (process.stdin.isTTY) {
    passphrase = await promptHidden('passphrase: ')
    if (forNewBackup && passphrase !== '' && await promptHidden('repeat it: ') !== passphrase) throw new UsageError('the two passphrases differ')
  } else {
    passphrase = await readStdin('passphrase')
  }
  if (passphrase === '') {
    throw new UsageError(forNewBackup
      ? 'an encrypted backup needs a passphrase: give it on standard input'
      : 'this backup is encrypted: give its passphrase on standard input')
  }
  if (forNewBackup && [...passphrase].length < MIN_PASSPHRASE) throw new UsageError(`the passphrase is too short: use at least ${MIN_PASSPHRASE} characters`)
  return passphrase
}

/** The backup file to restore; an encrypted one is opened with its passphrase. */
async function openBackup (file: string): Promise<ArchiveSource> {
  try {
    if (!await isEncrypted(file)) return await plainArchive(file)
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`there is no file ${file}`)
    throw error
  }
  return openEncrypted(file, await readPassphrase(false))
}

function option (values: Values, name: string): string {
  const value = values[name]
  if (typeof value !== 'string' || value.trim() === '') throw new UsageError(`--${name} is required`)
  return value.trim()
}

/** Checks an account's fields with the rules of the API's own schemas. */
function checkAccount<T extends Record<string, string>> (schema: TSchema, account: T): T {
  const validate = buildValidator()({ schema, httpPart: 'body' } as never) as ValidateFunction
  if (validate(account)) return account
  const [issue] = validate.errors ?? []
  const field = issue?.instancePath.slice(1)
  throw new UsageError(`${field === 'password' ? 'the password' : `--${field}`} ${issue?.message ?? 'is invalid'}`)
}

async function withDatabase<T> (config: Config, work: (sql: Sql) => Promise<T>): Promise<T> {
  const database = await openDatabase(config, log)
  try {
    return await work(database.sql)
  } finally {
    await database.close()
  }
}

const commands: Record<string, Command> = {
  'create-admin': {
    options: { email: { type: 'string' }, name: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
    async run (values, config) {
      const account = checkAccount(StrictObject({ email: Email, name: UserName, password: Password }), {
        email: option(values, 'email'),
        name: option(values, 'name'),
        password: await readPassword(values['password-stdin'] === true)
      })
      return withDatabase(config, async sql => {
        const user = await sql.begin(async tx => {
          if (await emailTaken(tx, account.email)) throw new Error(`a user with the e-mail ${account.email} already exists`)
          const passwordHash = await hashPassword(account.password, config.bcryptCost, COMMAND_LINE)
          return insertUser(tx, { email: account.email, name: account.name, passwordHash, role: 'admin' })
        })
        return `created the administrator ${user.email} (id ${user.id})`
      })
    }
  },
  'reset-password': {
    options: { email: { type: 'string' }, 'password-stdin': { type: 'boolean' } },
    async run (values, config) {
      const email = option(values, 'email')
      const { password } = checkAccount(StrictObject({ password: Password }), { password: await readPassword(values['password-stdin'] === true) })
      return withDatabase(config, async sql => {
        const account = await findCredentials(sql, email)
        if (account === undefined) throw new Error(`no user has the e-mail ${email}`)
        const passwordHash = await hashPassword(password, config.bcryptCost, COMMAND_LINE)
        await sql.begin(async tx => {
          await setPasswordHash(tx, account.id, passwordHash)
          await revokeUserSessions(tx, account.id)
        })
        return `reset the password of ${account.email} and signed out every session of theirs`
      })
    }
  },
  migrate: {
    options: {},
    run: (_values, config) => withDatabase(config, async sql => {
      const applied = await migrate(sql, { log })
      return applied.length === 0 ? 'the database is up to date' : `applied ${applied.length} migration(s)`
    })
  },
  backup: {
    options: { out: { type: 'string' }, keep: { type: 'string' }, encrypt: { type: 'boolean' } },
    async run (values, config) {
      const keep = values.keep === undefined ? null : Number(values.keep)
      if (keep !== null && !(Number.isInteger(keep) && keep >= 1)) throw new UsageError('--keep must be a whole number of 1 or more')
      const out = option(values, 'out')
      // The passphrase is checked before anything is written.
      const encryption = values.encrypt === true ? await sealer(await readPassphrase(true)) : undefined
      const target = await backupTarget(path.resolve(out), keep !== null || /[/\\]$/.test(out), new Date(), encryption === undefined ? '' : '.enc')
      if (target === null) throw new UsageError(`--out ${out} is a file: name a folder to keep backups in`)
      const { file, folder } = target
      const roots = { uploads: config.uploadDir, avatars: config.avatarDir }
      const manifest = await withDatabase(config, sql => writeBackup(sql, file, { roots, serviceVersion: config.version, progress: stderrProgress('backup'), encryption }))
      if (folder !== null && keep !== null) {
        for (const name of await pruneBackups(folder, keep)) log.info(`backup: removed the old backup ${name}`)
      }
      const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0)
      const bytes = manifest.files.reduce((sum, item) => sum + item.bytes, 0)
      return `backup written to ${file}${encryption === undefined ? '' : ', encrypted'}: ${plural(rows, 'row')} in ${plural(manifest.tables.length, 'table')}, ${plural(manifest.files.length, 'file')} (${megabytes(bytes)})`
    }
  },
  restore: {
    options: { in: { type: 'string' }, replace: { type: 'boolean' } },
    async run (values, config) {
      // The passphrase is checked before the database is opened.
      const archive = await openBackup(path.resolve(option(values, 'in')))
      const roots = { uploads: config.uploadDir, avatars: config.avatarDir }
      const manifest = await withDatabase(config, sql => restoreBackup(sql, archive, { roots, replace: values.replace === true, progress: stderrProgress('restore') }))
      const rows = manifest.tables.reduce((sum, table) => sum + table.rows, 0)
      return `restored the backup of ${manifest.createdAt}: ${plural(rows, 'row')}, ${plural(manifest.files.length, 'file')}`
    }
  },
  import: {
    options: { in: { type: 'string' }, owner: { type: 'string' } },
    async run (values, config) {
      const file = path.resolve(option(values, 'in'))
      const email = option(values, 'owner')
      return withDatabase(config, async sql => {
        const owner = await findCredentials(sql, email)
        if (owner === undefined) throw new Error(`no user has the e-mail ${email}`)
        try {
          const { family, counts } = await importArchive(sql, file, owner.id, null, config)
          const records = counts.measurements + counts.visits + counts.medicalEvents + counts.illnesses + counts.temperatures + counts.attachments
          return `imported the family ${JSON.stringify(family.name)} (id ${family.id}) for ${owner.email}: ${counts.children} ${counts.children === 1 ? 'child' : 'children'}, ${plural(records, 'record')}, ${plural(counts.files, 'file')}`
        } catch (error) {
          if (error instanceof ArchiveProblem) throw new Error(`the archive cannot be imported: ${error.message}`)
          if ((error as NodeJS.ErrnoException).code === 'ENOENT') throw new Error(`there is no file ${file}`)
          throw error
        }
      })
    }
  }
}

async function main (argv: string[]): Promise<void> {
  const [name, ...rest] = argv
  if (name === undefined || name === 'help' || name === '--help' || name === '-h') {
    process.stdout.write(`${USAGE}\n`)
    if (name === undefined) process.exitCode = 1
    return
  }
  const command = Object.hasOwn(commands, name) ? commands[name] : undefined
  if (command === undefined) throw new UsageError(`unknown command "${name}"; run with --help for the list`)
  let values: Values
  try {
    values = parseArgs({ args: rest, options: command.options, strict: true, allowPositionals: false }).values
  } catch (error) {
    throw new UsageError((error as Error).message)
  }
  const config = loadConfig()
  containWriteAfterClose(message => process.stderr.write(`${stderrPriority(4)}warning: ${message}\n`))
  process.stdout.write(`${await command.run(values, config)}\n`)
}

main(process.argv.slice(2)).then(() => process.exit(), error => {
  const message = error instanceof Error ? error.message : String(error)
  process.stderr.write(`${stderrPriority(3)}${message.split('\n')[0]}\n`)
  process.exit(error instanceof UsageError ? 2 : 1)
})
