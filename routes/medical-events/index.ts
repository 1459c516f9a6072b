import { Type } from '@sinclair/typebox'
import { medicalEventKind } from '../../kinds/medical-events'
import { recordRoutes, type RecordSpec } from '../records'

export const medicalEventSpec: RecordSpec = {
  ...medicalEventKind,
  path: 'medical-events',
  singular: 'MedicalEvent',
  plural: 'MedicalEvents',
  filters: { type: Type.Optional(Type.String({ enum: ['vaccine', 'procedure', 'medication'] })) },
  filterSql: (db, query) => query.type === undefined ? [] : [db`and type = ${query.type as string}`]
}

export default recordRoutes(medicalEventSpec)
