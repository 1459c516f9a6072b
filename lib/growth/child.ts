import { chartsFor, growthSource, type ChartOptions, type GrowthReference } from './charts'
import { growthPoint, type GrowthChild, type GrowthMeasurement } from './point'
import type { GrowthTables } from './tables'
import { growthTrends, type GrowthAlert, type TrendPoint } from './trends'

export interface ChildGrowth {
  childId: number
  sex: string
  dateOfBirth: string
  gestationalAgeAtBirthWeeks: number | null
  gestationalAgeAtBirthDays: number | null
  reference: GrowthReference
  source: string
  points: TrendPoint[]
  alerts: GrowthAlert[]
}

/**
 * A child's growth document: every measurement given, scored against the WHO
 * references, or CDC's charts as `options.reference` asks (see growthPoint),
 * with its velocity, the centile lines each score crossed and the alerts.
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
    reference,
    source: growthSource(reference),
    ...growthTrends(measurements.map(measurement => growthPoint(tables, child, measurement, options)))
  }
}
