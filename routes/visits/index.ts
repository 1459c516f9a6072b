import { Type } from '@sinclair/typebox'
import { measurementKind } from '../../kinds/measurements'
import { visitKind } from '../../kinds/visits'
import { insertRecord } from '../../sql/records'
import { recordRoutes, type RecordSpec } from '../records'
import { CreatedVisit, VisitCreateFields } from './schemas'

export const visitSpec: RecordSpec = {
  ...visitKind,
  path: 'visits',
  singular: 'Visit',
  plural: 'Visits',
  createFields: VisitCreateFields,
  createSchema: CreatedVisit,
  filters: { type: Type.Optional(Type.String({ enum: ['wellness', 'sick', 'injury', 'vision', 'dental'] })) },
  filterSql: (db, query) => query.type === undefined ? [] : [db`and type = ${query.type as string}`],
  /** A visit with a measurement: both are written in one transaction, or neither. */
  create: async (tx, childId, body) => {
    const { measurement, ...fields } = body as Record<string, unknown> & { measurement?: Record<string, unknown> | null }
    const visit = await insertRecord(tx, visitSpec, childId, fields)
    if (measurement == null) return visit
    const created = await insertRecord(tx, measurementKind, childId, { ...measurement, measuredAt: visit.date, visitId: visit.id })
    return { ...visit, measurement: created }
  }
}

export default recordRoutes(visitSpec)
