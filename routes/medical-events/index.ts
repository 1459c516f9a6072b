import { Type } from '@sinclair/typebox'
import { medicalEventColumns } from '../../lib/kinds'
import { recordRoutes, type Issue, type RecordSpec } from '../records'
import { MedicalEvent, MedicalEventFields } from './schemas'

/** The fields of a dose, which only a vaccine has. */
const DOSE_FIELDS = ['doseNumber', 'lotNumber', 'site', 'nextDueDate']

/** A dose's fields only on a vaccine; the next dose not due before this one was given. */
function doseIssues (body: Record<string, unknown>): Issue[] {
  const issues: Issue[] = []
  if (body.type !== 'vaccine') {
    for (const field of DOSE_FIELDS) {
      if (body[field] !== null && body[field] !== undefined) issues.push({ path: `/body/${field}`, message: 'only for a vaccine' })
    }
  }
  if (typeof body.nextDueDate === 'string' && typeof body.date === 'string' && body.nextDueDate < body.date) {
    issues.push({ path: '/body/nextDueDate', message: 'must not be before date' })
  }
  return issues
}

export const medicalEventSpec: RecordSpec = {
  kind: 'medicalEvent',
  path: 'medical-events',
  table: 'medical_events',
  singular: 'MedicalEvent',
  plural: 'MedicalEvents',
  schema: MedicalEvent,
  fields: MedicalEventFields,
  columns: medicalEventColumns,
  writable: ['date', 'type', 'name', 'description', 'visitId', 'doseNumber', 'lotNumber', 'site', 'nextDueDate'],
  // nextDueDate is not among them: it may lie in the future.
  dates: ['date'],
  sorts: { date: 'date', type: 'type', createdAt: 'created_at' },
  defaultSort: '-date',
  filters: { type: Type.Optional(Type.String({ enum: ['vaccine', 'procedure', 'medication'] })) },
  filterSql: (db, query) => query.type === undefined ? [] : [db`and type = ${query.type as string}`],
  check: doseIssues
}

export default recordRoutes(medicalEventSpec)
