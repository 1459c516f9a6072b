import { growthPoint, type GrowthMeasurement, type GrowthPoint } from './point'
import { GROWTH_SOURCE } from './sources'
import type { GrowthTables } from './tables'

export interface ChildGrowth {
  childId: number
  sex: string
  dateOfBirth: string
  source: string
  points: GrowthPoint[]
}

/** A child's growth document: every measurement given, scored against the WHO references. */
export function childGrowth (tables: GrowthTables, child: { id: number, sex: string, dateOfBirth: string }, measurements: GrowthMeasurement[]): ChildGrowth {
  return {
    childId: child.id,
    sex: child.sex,
    dateOfBirth: child.dateOfBirth,
    source: GROWTH_SOURCE,
    points: measurements.map(measurement => growthPoint(tables, child, measurement))
  }
}
