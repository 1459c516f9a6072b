import t from 'tap'
import { KINDS } from '../kinds'
import { CHANGE_KINDS } from '../kinds/changes'

t.test('the changes feed keeps its enum of kinds in the order clients know, new kinds after', async t => {
  t.same(CHANGE_KINDS.slice(0, 11), [
    'family', 'member', 'child', 'measurement', 'visit', 'medicalEvent', 'illness', 'attachment', 'temperature', 'medicineCourse', 'medicineDose'
  ])
  t.equal(CHANGE_KINDS.length, new Set(CHANGE_KINDS).size, 'each kind once')
  const orders = KINDS.map(kind => kind.changeOrder)
  t.equal(new Set(orders).size, orders.length, 'no two kinds of records share a place')
  t.ok(KINDS.every(kind => CHANGE_KINDS.includes(kind.kind)), 'every kind of record changes')
})
