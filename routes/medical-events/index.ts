import { Type } from '@sinclair/typebox'
import { medicalEventColumns } from '../../lib/kinds'
import { recordRoutes, type RecordSpec } from '../records'
import { MedicalEvent, MedicalEventFields } from './schemas'

export const medicalEventSpec: RecordSpec = {
  kind: 'medicalEvent',
  path: 'medical-events',
  table: 'medical_events',
  singular: 'MedicalEvent',
  plural: 'MedicalEvents',
  schema: MedicalEvent,
  fields: MedicalEventFields,
  columns: medicalEventColumns,
  writable: ['date', 'type', 'name', 'description', 'visitId'],
  dates: ['date'],
  sorts: { date: 'date', type: 'type', createdAt: 'created_at' },
  defaultSort: '-date',
  filters: { type: Type.Optional(Type.String({ enum: ['vaccine', 'procedure', 'medication'] })) },
  filterSql: (db, query) => query.type === undefined ? [] : [db`and type = ${query.type as string}`]
}

export default recordRoutes(medicalEventSpec)
