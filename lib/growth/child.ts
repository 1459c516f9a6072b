import { chartsFor, growthSource, type ChartOptions } from './charts'
import { growthPoint, type GrowthChild, type GrowthMeasurement, type GrowthPoint } from './point'
import type { GrowthTables } from './tables'

export interface ChildGrowth {
  childId: number
  sex: string
  dateOfBirth: string
  gestationalAgeAtBirthWeeks: number | null
  gestationalAgeAtBirthDays: number | null
  source: string
  points: GrowthPoint[]
}

/**
 * A child's growth document: every measurement given, scored against the WHO
 * references, or CDC's charts as `options.reference` asks (see growthPoint).
 * Throws when a table the reference needs is not given.
 */
export function childGrowth (tables: GrowthTables | null, child: GrowthChild & { id: number }, measurements: GrowthMeasurement[], options: ChartOptions = {}): ChildGrowth {
  const { reference } = chartsFor(tables, options)
  return {
    childId: child.id,
    sex: child.sex,
    dateOfBirth: child.dateOfBirth,
    gestationalAgeAtBirthWeeks: child.gestationalAgeAtBirthWeeks ?? null,
    gestationalAgeAtBirthDays: child.gestationalAgeAtBirthDays ?? null,
    source: growthSource(reference),
    points: measurements.map(measurement => growthPoint(tables, child, measurement, options))
  }
}
