import { parseArgs } from 'node:util'
import { loadConfig } from '../io/config'
import { stderrPriority } from '../io/log-destination'
import { MIN_PASSPHRASE } from '../db/backup/encryption'
import { containWriteAfterClose } from '../db/write-after-close'
import { backup } from './backup'
import { UsageError, type Command, type Values } from './command'
import { createAdmin } from './create-admin'
import { importFamily } from './import'
import { migrate } from './migrate'
import { resetPassword } from './reset-password'
import { restore } from './restore'

/**
 * The admin command line: accounts, migrations, backup and restore, and the
 * import of a family archive, with the server's own configuration. One file a
 * command; this one reads the arguments and runs the command they name.
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

const commands: Record<string, Command> = {
  'create-admin': createAdmin,
  'reset-password': resetPassword,
  migrate,
  backup,
  restore,
  import: importFamily
}

/** Runs the command the arguments name and prints its one line on stdout. */
export async function main (argv: string[]): Promise<void> {
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
