/** The shape of a run. Durations can be shortened for a quick look with BENCH_DURATION and BENCH_WARMUP (seconds). */

function seconds (name: string, fallback: number): number {
  const raw = process.env[name]
  if (raw === undefined || raw === '') return fallback
  const value = Number(raw)
  if (!Number.isFinite(value) || value <= 0 || value > 600) throw new Error(`${name} must be a number of seconds from 1 to 600`)
  return value
}

export const settings = {
  connections: 32,
  loginLoadConnections: 8,
  warmupSeconds: seconds('BENCH_WARMUP', 3),
  durationSeconds: seconds('BENCH_DURATION', 10),
  bcryptCost: 10,
  families: 50,
  childrenPerFamily: 2,
  measurementsPerChild: 200,
  visitsPerChild: 50,
  medicalEventsPerChild: 20,
  illnessesPerChild: 8,
  attachmentsPerChild: 10,
  listLimit: 100,
  /** Families whose owners stall exports; their children are left out of the reads alongside. */
  stallingFamilies: 3,
  stallFilesPerFamily: 4,
  stallFileMb: 8,
  stalledExports: 20,
  slowlorisConnections: 50,
  password: 'bench-password-2024'
}
