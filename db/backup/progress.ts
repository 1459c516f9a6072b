/** Progress of long work, one line at a time on stderr. */
export interface Progress {
  /** A line said at once. */
  note: (message: string) => void
  /** A counting line, said at most once a second and always when `last`. */
  tick: (message: () => string, last?: boolean) => void
}

const EVERY_MS = 1000

export function megabytes (bytes: number): string {
  return `${(bytes / 1024 / 1024).toFixed(1)} MB`
}

export function stderrProgress (prefix: string, out: NodeJS.WritableStream = process.stderr): Progress {
  let said = 0
  return {
    note (message) {
      out.write(`${prefix}: ${message}\n`)
    },
    tick (message, last = false) {
      const now = Date.now()
      if (!last && now - said < EVERY_MS) return
      said = now
      out.write(`${prefix}: ${message()}\n`)
    }
  }
}

export function plural (count: number, noun: string): string {
  return `${count} ${noun}${count === 1 ? '' : 's'}`
}
