import type { ValidateFunction } from 'ajv'
import { addAge, lastDayThrough } from './ages'
import { VaccineSchedule } from './schema'

const BIRTH = '2000-01-01'

/** The rules a schema cannot state: doses numbered 1, 2, 3…, ranges that end after they start, codes unique. */
function consistencyIssue (schedule: VaccineSchedule): string | null {
  const codes = new Set<string>()
  for (const series of schedule.series) {
    if (codes.has(series.code.toLowerCase())) return `series ${series.code} appears twice`
    codes.add(series.code.toLowerCase())
    for (const [index, dose] of series.doses.entries()) {
      if (dose.number !== index + 1) return `${series.code} dose ${index + 1} is numbered ${dose.number}`
      const last = index === series.doses.length - 1
      if (last !== (dose.minIntervalToNext === null)) return `${series.code} dose ${dose.number}: minIntervalToNext must be null for the last dose only`
      // Ages in any units compare by the days a child born on 1 January 2000 reaches them.
      if (lastDayThrough(BIRTH, dose.onTime.to) < addAge(BIRTH, dose.onTime.from)) return `${series.code} dose ${dose.number}: the on-time range ends before it starts`
    }
  }
  return null
}

/** The schema's validator: the one the build wrote out, or one compiled at the first file read. */
let validate: ValidateFunction | undefined

/**
 * An Ajv instance for the schedules' schema. The schema is the service's
 * own, checked against JSON Schema's meta-schema by the tests
 * (schema-meta.test.ts), so a start does not check it again.
 */
function scheduleAjv (keepCode = false) {
  const { default: Ajv } = require('ajv') as typeof import('ajv')
  return new Ajv({ strict: false, validateSchema: false, ...(keepCode ? { code: { source: true } } : {}) })
}

/** The validator's code as a CommonJS module, as the build writes it out. */
export function scheduleValidatorCode (): string {
  const { default: standaloneCode } = require('ajv/dist/standalone') as typeof import('ajv/dist/standalone')
  const ajv = scheduleAjv(true)
  return standaloneCode(ajv, ajv.compile(VaccineSchedule))
}

/** Takes the validator the build wrote out, so that reading the shipped schedules compiles nothing. */
export function useScheduleValidator (written: ValidateFunction): void {
  validate = written
}

/**
 * Reads one schedule file and checks it against the schema and its rules. A
 * file that is unreadable, not JSON or not a schedule throws an Error whose
 * message names it and the first problem.
 */
export function parseSchedule (text: string, file: string): VaccineSchedule {
  let value: unknown
  try {
    value = JSON.parse(text)
  } catch (error) {
    throw new Error(`vaccine schedule ${file} is not JSON: ${(error as Error).message}`)
  }
  validate ??= scheduleAjv().compile(VaccineSchedule)
  if (!validate(value)) {
    const [issue] = validate.errors ?? []
    throw new Error(`vaccine schedule ${file}: ${issue?.instancePath === '' || issue === undefined ? '' : `${issue.instancePath} `}${issue?.message ?? 'is not valid'}`)
  }
  const schedule = value as VaccineSchedule
  const rule = consistencyIssue(schedule)
  if (rule !== null) throw new Error(`vaccine schedule ${file}: ${rule}`)
  return schedule
}
