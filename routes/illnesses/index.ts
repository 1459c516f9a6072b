import { Type } from '@sinclair/typebox'
import { illnessColumns, withIllnessStatus } from '../../lib/kinds'
import { recordRoutes, type RecordSpec } from '../records'
import { Illness, IllnessFields } from './schemas'

export const illnessSpec: RecordSpec = {
  kind: 'illness',
  path: 'illnesses',
  table: 'illnesses',
  singular: 'Illness',
  plural: 'Illnesses',
  schema: Illness,
  fields: IllnessFields,
  columns: illnessColumns,
  writable: ['startDate', 'endDate', 'diagnosis', 'symptoms', 'medications', 'temperatureC', 'visitId', 'notes'],
  dates: ['startDate', 'endDate'],
  sorts: { startDate: 'start_date', endDate: 'end_date', createdAt: 'created_at' },
  defaultSort: '-startDate',
  filters: { status: Type.Optional(Type.String({ enum: ['current', 'finished'] })) },
  filterSql: (db, query) => {
    if (query.status === 'current') return [db`and end_date is null`]
    if (query.status === 'finished') return [db`and end_date is not null`]
    return []
  },
  check: body => typeof body.endDate === 'string' && body.endDate < (body.startDate as string)
    ? [{ path: '/body/endDate', message: 'must not be before startDate' }]
    : [],
  toResponse: withIllnessStatus,
  derivedSql: {
    temperatureC: 'coalesce(r.max_temperature_c, r.temperature_c)::float8',
    status: "case when r.end_date is null then 'current' else 'finished' end"
  }
}

export default recordRoutes(illnessSpec)
