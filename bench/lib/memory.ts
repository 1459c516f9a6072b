import { existsSync, readFileSync, writeFileSync } from 'node:fs'

/** How long a process is left alone before its idle memory is read. */
export const IDLE_MS = 5_000

/** A process's resident memory now (VmRSS) and at its highest so far (VmHWM), in MB. */
export interface Resident {
  rssMb: number
  hwmMb: number
}

/** The bench's own service in a whole run: its VmRSS idle once seeded, and at its highest under the list load. */
export interface ServiceMemory {
  seededMb: number
  peak: Peak
}

export interface Peak {
  /** The highest of VmRSS sampled every 100 ms and, when it could be reset before, VmHWM. */
  peakMb: number
  sampledMb: number
  samples: number
  /** Whether VmHWM was reset at the start (clear_refs), so that it is the peak of the watch alone. */
  hwmReset: boolean
}

const pause = (ms: number): Promise<void> => new Promise(resolve => setTimeout(resolve, ms))

/** The process's VmRSS and VmHWM from /proc/<pid>/status. */
export function residentOf (pid: number): Resident {
  const status = readFileSync(`/proc/${pid}/status`, 'utf8')
  const megabytes = (field: string): number => {
    const match = new RegExp(`^${field}:\\s+(\\d+) kB`, 'm').exec(status)
    if (match === null) throw new Error(`/proc/${pid}/status has no ${field}`)
    return Math.round(Number(match[1]) / 1024)
  }
  return { rssMb: megabytes('VmRSS'), hwmMb: megabytes('VmHWM') }
}

/** The processes' VmRSS once they have been left alone for `ms`. */
export async function idleRss (pids: number[], ms = IDLE_MS): Promise<number[]> {
  await pause(ms)
  return pids.map(pid => residentOf(pid).rssMb)
}

/** The kernel resets a process's VmHWM to its VmRSS on a 5 written to its clear_refs; false where that is not allowed. */
function resetHwm (pid: number): boolean {
  const file = `/proc/${pid}/clear_refs`
  if (!existsSync(file)) return false
  try {
    writeFileSync(file, '5')
    return true
  } catch {
    return false
  }
}

/** The process's highest resident memory while `work` runs: VmRSS sampled every 100 ms, and VmHWM reset at the start. */
export async function peakDuring (pid: number, work: () => Promise<void>): Promise<Peak> {
  const hwmReset = resetHwm(pid)
  let sampledMb = residentOf(pid).rssMb
  let samples = 1
  const sampler = setInterval(() => {
    try {
      sampledMb = Math.max(sampledMb, residentOf(pid).rssMb)
      samples++
    } catch {
      clearInterval(sampler)
    }
  }, 100)
  try {
    await work()
  } finally {
    clearInterval(sampler)
  }
  const { rssMb, hwmMb } = residentOf(pid)
  sampledMb = Math.max(sampledMb, rssMb)
  return { peakMb: hwmReset ? Math.max(sampledMb, hwmMb) : sampledMb, sampledMb, samples: samples + 1, hwmReset }
}
