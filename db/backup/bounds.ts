/** How long one step of a backup (one read of the database, one table, the files) and the whole backup may take, in milliseconds. */
export interface Bounds {
  stepMs: number
  totalMs: number
}

/** A step of a backup, or the whole of it, that ran out of time. */
export class BackupTimeout extends Error {
  constructor (readonly step: string, ms: number) {
    super(`backup: ${step} did not finish within ${seconds(ms)}; nothing was written`)
  }
}

function seconds (ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000} s` : `${(ms / 1000).toFixed(1)} s`
}

/** Whether PostgreSQL cancelled a statement for its statement_timeout. */
function cancelled (error: unknown): boolean {
  return (error as { code?: string } | null)?.code === '57014'
}

export interface Steps {
  /** Runs `work` as the step `name`: it fails with a BackupTimeout once the step's time is up (or its statement_timeout cut it), and once the whole backup's is. */
  run: <T>(name: string, work: () => Promise<T>) => Promise<T>
  /** Settles as `work` does, or rejects with the first BackupTimeout of any step: for work that cannot be cut short from inside (a transaction whose connection is stuck). */
  race: <T>(work: Promise<T>) => Promise<T>
  stop: () => void
}

/**
 * The timers of one backup. A step that trips rejects at once, even when what
 * it waits on (a stalled stream, a connection that no longer reads) never
 * settles; the caller then closes the connections.
 */
export function steps ({ stepMs, totalMs }: Bounds): Steps {
  let trip: (error: BackupTimeout) => void = () => {}
  const tripped = new Promise<never>((_resolve, reject) => { trip = reject })
  tripped.catch(() => {})
  const overall = setTimeout(() => trip(new BackupTimeout('the whole backup', totalMs)), totalMs)
  const race = <T>(work: Promise<T>): Promise<T> => Promise.race([work, tripped])
  return {
    race,
    async run (name, work) {
      let timer: NodeJS.Timeout | undefined
      const late = new Promise<never>((_resolve, reject) => {
        timer = setTimeout(() => {
          const error = new BackupTimeout(name, stepMs)
          trip(error)
          reject(error)
        }, stepMs)
      })
      try {
        return await race(Promise.race([work(), late]))
      } catch (error) {
        throw cancelled(error) ? new BackupTimeout(name, stepMs) : error
      } finally {
        clearTimeout(timer)
      }
    },
    stop: () => clearTimeout(overall)
  }
}
