import { Type } from '@sinclair/typebox'
import { illnessKind } from '../../kinds/illnesses'
import { recordRoutes, type RecordSpec } from '../records'

export const illnessSpec: RecordSpec = {
  ...illnessKind,
  path: 'illnesses',
  singular: 'Illness',
  plural: 'Illnesses',
  filters: { status: Type.Optional(Type.String({ enum: ['current', 'finished'] })) },
  filterSql: (db, query) => {
    if (query.status === 'current') return [db`and end_date is null`]
    if (query.status === 'finished') return [db`and end_date is not null`]
    return []
  }
}

export default recordRoutes(illnessSpec)
