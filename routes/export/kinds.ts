import type { RecordSpec } from '../records'
import { illnessSpec } from '../illnesses'
import { measurementSpec } from '../measurements'
import { medicalEventSpec } from '../medical-events'
import { temperatureSpec } from '../temperatures'
import { visitSpec } from '../visits'

export type RecordKey = 'measurements' | 'visits' | 'medicalEvents' | 'illnesses' | 'temperatures'

/** The kinds of a child's records, under their names in the export, in its order. */
export const recordKinds: Array<{ key: RecordKey, spec: RecordSpec }> = [
  { key: 'measurements', spec: measurementSpec },
  { key: 'visits', spec: visitSpec },
  { key: 'medicalEvents', spec: medicalEventSpec },
  { key: 'illnesses', spec: illnessSpec },
  // After the illnesses they belong to.
  { key: 'temperatures', spec: temperatureSpec }
]
