/**
 * Where the server's log lines go.
 *
 * - Under systemd, with standard output connected to the journal, each JSON
 *   line starts with the sd-daemon priority prefix `<N>`, so that journald
 *   files it at the line's level and `journalctl -p warning` finds warnings.
 *   The journal is recognised by JOURNAL_STREAM, which systemd sets when it
 *   connects standard output to the journal. The variable is honoured as soon
 *   as it is set, without comparing its device:inode to standard output's, so
 *   that a test can force it; only a terminal, which is never the journal, is
 *   not taken for it (a desktop session can pass the variable on to its shells).
 * - In development on a terminal, readable lines from pino-pretty, a
 *   development dependency: where it is not installed, JSON lines.
 * - Otherwise JSON lines on standard output, as pino writes them.
 */

/** Something pino can write its lines to. */
export interface LineSink {
  write (line: string): unknown
}

export type LogOutput = 'journal' | 'pretty' | 'json'

/** The sd-daemon priority of a pino level: crit, err, warning, info, debug. */
export function journalPriority (level: number): number {
  if (level >= 60) return 2
  if (level >= 50) return 3
  if (level >= 40) return 4
  if (level >= 30) return 6
  return 7
}

const LEVEL_FIELD = '{"level":'

/**
 * The level of a pino line, read from its start (pino writes the level first)
 * without parsing the rest; undefined when the line does not start with one.
 */
export function lineLevel (line: string): number | undefined {
  if (!line.startsWith(LEVEL_FIELD)) return undefined
  let level = 0
  let at = LEVEL_FIELD.length
  for (; at < line.length; at++) {
    const digit = line.charCodeAt(at) - 48
    if (digit < 0 || digit > 9) break
    level = level * 10 + digit
  }
  return at === LEVEL_FIELD.length ? undefined : level
}

/** A line with its journal priority prefix; a line without a level is info. */
export function withPriority (line: string): string {
  const level = lineLevel(line)
  return `<${level === undefined ? 6 : journalPriority(level)}>${line}`
}

/**
 * Writes each line to `target` behind its journal priority prefix. Pino
 * writes one line per call; a chunk of several lines gets a prefix on each.
 */
export function journalStream (target: LineSink): { write (chunk: string): void } {
  return {
    write (chunk) {
      const text = String(chunk)
      const end = text.indexOf('\n')
      if (end === -1 || end === text.length - 1) {
        target.write(withPriority(text))
        return
      }
      target.write(text.split(/(?<=\n)/).map(withPriority).join(''))
    }
  }
}

/** Whether a stream of this process is the journal: JOURNAL_STREAM is set, and the stream is no terminal. */
export function isJournal (env: Record<string, string | undefined>, isTTY: boolean | undefined): boolean {
  return (env.JOURNAL_STREAM ?? '') !== '' && isTTY !== true
}

/** JSON for the journal, readable lines only in development on a terminal, JSON otherwise. */
export function chooseLogOutput (options: { production: boolean, isTTY: boolean | undefined, journalStream: string | undefined }): LogOutput {
  if (isJournal({ JOURNAL_STREAM: options.journalStream }, options.isTTY)) return 'journal'
  if (!options.production && options.isTTY === true) return 'pretty'
  return 'json'
}

type PrettyFactory = (options: Record<string, unknown>) => LineSink

/** pino-pretty's stream, or undefined where the package is not installed (a production install). */
export function prettyStream (load: () => unknown = () => require('pino-pretty')): LineSink | undefined {
  let pretty: PrettyFactory
  try {
    pretty = load() as PrettyFactory
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'MODULE_NOT_FOUND') return undefined
    throw error
  }
  // Synchronous, so that the lines of a shutdown are written before the process exits.
  return pretty({ colorize: true, translateTime: 'SYS:HH:MM:ss', ignore: 'pid,hostname', sync: true })
}

/**
 * The stream option of the server's logger: none (pino's own JSON on
 * standard output) unless standard output is the journal, or a terminal in
 * development.
 */
export function logDestination (
  production: boolean,
  env: Record<string, string | undefined> = process.env,
  stdout: LineSink & { isTTY?: boolean } = process.stdout
): { stream?: LineSink } {
  switch (chooseLogOutput({ production, isTTY: stdout.isTTY, journalStream: env.JOURNAL_STREAM })) {
    case 'journal': return { stream: journalStream(stdout) }
    case 'pretty': {
      const stream = prettyStream()
      return stream === undefined ? {} : { stream }
    }
    case 'json': return {}
  }
}

/**
 * The prefix of a plain line written to standard error by the entry points (a
 * failed start, a warning of the command line): `<N>` under the journal, else nothing.
 */
export function stderrPriority (priority: number, env: Record<string, string | undefined> = process.env, stderr: { isTTY?: boolean } = process.stderr): string {
  return isJournal(env, stderr.isTTY) ? `<${priority}>` : ''
}
