import { Type } from '@sinclair/typebox'
import { Pagination } from '../../lib/schemas'

export const ScheduleListQuery = Type.Object({ ...Pagination })
