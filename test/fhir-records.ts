/**
 * The records test/fhir.test.ts makes a bundle from: the kinds' own types,
 * less the fields those records leave out (the version and a vaccine's
 * series, which no resource shows, and an illness's highest reading, read as
 * none when it is missing).
 */
import type { Illness as IllnessRecord } from '../kinds/illnesses'
import type { ScoredMeasurement } from '../kinds/measurements'
import type { MedicalEvent as MedicalEventRecord } from '../kinds/medical-events'
import type { Visit as VisitRecord } from '../kinds/visits'

export type Visit = Omit<VisitRecord, 'version'>
export type Measurement = Omit<ScoredMeasurement, 'version'>
export type MedicalEvent = Omit<MedicalEventRecord, 'version' | 'vaccine'>
export type Illness = Omit<IllnessRecord, 'version' | 'maxTemperatureC'> & Partial<Pick<IllnessRecord, 'maxTemperatureC'>>
