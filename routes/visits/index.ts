import { Type } from '@sinclair/typebox'
import { insertRecord } from '../../sql/records'
import { measurementSpec } from '../measurements'
import { checkValues } from '../measurements/schemas'
import { visitColumns } from '../../lib/kinds'
import { recordRoutes, type RecordSpec } from '../records'
import { CreatedVisit, Visit, VisitCreateFields, VisitFields } from './schemas'

export const visitSpec: RecordSpec = {
  kind: 'visit',
  path: 'visits',
  table: 'visits',
  singular: 'Visit',
  plural: 'Visits',
  schema: Visit,
  fields: VisitFields,
  createFields: VisitCreateFields,
  createSchema: CreatedVisit,
  columns: visitColumns,
  writable: ['date', 'type', 'provider', 'notes'],
  dates: ['date'],
  sorts: { date: 'date', type: 'type', createdAt: 'created_at' },
  defaultSort: '-date',
  filters: { type: Type.Optional(Type.String({ enum: ['wellness', 'sick', 'injury', 'vision', 'dental'] })) },
  filterSql: (db, query) => query.type === undefined ? [] : [db`and type = ${query.type as string}`],
  check: body => {
    const measurement = body.measurement as Record<string, unknown> | null | undefined
    return measurement == null ? [] : checkValues(measurement, '/body/measurement')
  },
  /** A visit with a measurement: both are written in one transaction, or neither. */
  create: async (tx, childId, body) => {
    const { measurement, ...fields } = body as Record<string, unknown> & { measurement?: Record<string, unknown> | null }
    const visit = await insertRecord(tx, visitSpec, childId, fields)
    if (measurement == null) return visit
    const created = await insertRecord(tx, measurementSpec, childId, { ...measurement, measuredAt: visit.date, visitId: visit.id })
    return { ...visit, measurement: created }
  }
}

export default recordRoutes(visitSpec)
