import { growthPoint, type GrowthChild, type GrowthMeasurement, type GrowthPoint } from './point'
import { GROWTH_SOURCE } from './sources'
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

/** A child's growth document: every measurement given, scored against the WHO references. */
export function childGrowth (tables: GrowthTables, child: GrowthChild & { id: number }, measurements: GrowthMeasurement[]): ChildGrowth {
  return {
    childId: child.id,
    sex: child.sex,
    dateOfBirth: child.dateOfBirth,
    gestationalAgeAtBirthWeeks: child.gestationalAgeAtBirthWeeks ?? null,
    gestationalAgeAtBirthDays: child.gestationalAgeAtBirthDays ?? null,
    source: GROWTH_SOURCE,
    points: measurements.map(measurement => growthPoint(tables, child, measurement))
  }
}
