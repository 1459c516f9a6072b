import { temperatureKind } from '../../kinds/temperatures'
import { recordRoutes, type RecordSpec } from '../records'

const SCOPE = 'Within the family scope of the illness\'s child: any member reads, an owner or member writes; an illness of another family is a 403, one that does not exist a 404.'

export const temperatureSpec: RecordSpec = {
  ...temperatureKind,
  path: 'temperatures',
  singular: 'Temperature',
  plural: 'Temperatures',
  noun: 'temperature reading',
  parent: { path: 'illnesses', param: 'illnessId', table: 'illnesses', singular: 'Illness', column: 'illness_id' },
  descriptions: {
    list: `Oldest first by default. from and to are UTC dates of takenAt, inclusive. The ETag changes with any change of the child's records. ${SCOPE}`,
    create: `The reading belongs to the illness and its child for good. When it is the illness's new highest, the illness changes too (maxTemperatureC, temperatureC, version). ${SCOPE}`
  }
}

export default recordRoutes(temperatureSpec)
