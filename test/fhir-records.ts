/**
 * The records test/fhir.test.ts makes its bundle from, in the shapes of the
 * routes' answers but for what the FHIR mapping does not read (the version).
 * The kinds' own types, in kinds/, are the answers whole.
 */

export interface Visit {
  id: number
  childId: number
  date: string
  type: 'wellness' | 'sick' | 'injury' | 'vision' | 'dental'
  provider: string | null
  notes: string | null
  createdAt: string
  updatedAt: string
}

export interface Illness {
  id: number
  childId: number
  startDate: string
  endDate: string | null
  diagnosis: string | null
  symptoms: string | null
  medications: string | null
  temperatureC: number | null
  /** The highest temperature reading; null without readings. */
  maxTemperatureC?: number | null
  visitId: number | null
  notes: string | null
  status: 'current' | 'finished'
  createdAt: string
  updatedAt: string
}

export interface MedicalEvent {
  id: number
  childId: number
  date: string
  type: 'vaccine' | 'procedure' | 'medication'
  name: string
  description: string | null
  visitId: number | null
  doseNumber: number | null
  lotNumber: string | null
  site: string | null
  nextDueDate: string | null
  createdAt: string
  updatedAt: string
}
