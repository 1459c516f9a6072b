// The vaccine schedules the service ships (schedules/*.json), read from disk
// and checked once.
import { readdirSync, readFileSync } from 'node:fs'
import path from 'node:path'
import { parseSchedule, useScheduleValidator, type VaccineSchedule } from '../lib/schedules'
import { writtenScheduleValidator } from './precompiled'
import { oncePerFolder } from '../lib/per-folder'

/**
 * Where the shipped schedules are: `schedules` at the root of the project,
 * found from this file (io/), so the same path works from the sources and
 * from dist/, where the build copies them.
 */
export const SCHEDULES_DIR = path.join(__dirname, '..', 'schedules')

/** Every schedule of a folder (its .json files, by name), checked; ids must be unique. */
export function readSchedules (dir: string = SCHEDULES_DIR): VaccineSchedule[] {
  const written = writtenScheduleValidator()
  if (written !== undefined) useScheduleValidator(written)
  const files = readdirSync(dir).filter(file => file.endsWith('.json')).sort()
  const schedules = files.map(file => parseSchedule(readFileSync(path.join(dir, file), 'utf8'), file))
  const ids = new Set<string>()
  for (const schedule of schedules) {
    if (ids.has(schedule.id)) throw new Error(`vaccine schedule ${schedule.id} is defined twice in ${dir}`)
    ids.add(schedule.id)
  }
  return schedules
}

/** The schedules of a folder (by default the shipped one), read and checked once. Throws as readSchedules does. */
export const loadSchedules = oncePerFolder(readSchedules, SCHEDULES_DIR)

/** The shipped schedules, in the order of their files. */
export function schedules (): VaccineSchedule[] {
  return loadSchedules()
}

/** A shipped schedule by its id, or undefined. */
export function scheduleById (id: string | null | undefined): VaccineSchedule | undefined {
  return id == null ? undefined : loadSchedules().find(schedule => schedule.id === id)
}

/** The ids of the shipped schedules. */
export function scheduleIds (): string[] {
  return loadSchedules().map(schedule => schedule.id)
}
