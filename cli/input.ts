// What the command line reads from its user: passwords and passphrases, from
// standard input (without echo on a terminal) or the environment, never from
// its arguments.
import { MIN_PASSPHRASE } from '../db/backup/encryption'
import { UsageError } from './command'

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
export async function readPassword (fromStdin: boolean): Promise<string> {
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
export async function readPassphrase (forNewBackup: boolean): Promise<string> {
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
