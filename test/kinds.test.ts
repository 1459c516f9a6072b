import t from 'tap'
import { SUMMARY_SECTIONS } from '../lib/fhir'
import { BUNDLE_KINDS, KINDS, SUMMARY_PARTS } from '../kinds'
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

t.test('a child\'s bundle has each kind after the records it points to', async t => {
  const order: string[] = BUNDLE_KINDS.map(kind => kind.kind)
  t.same([...order].sort(), KINDS.map(kind => kind.kind).sort(), 'every kind once')
  for (const kind of BUNDLE_KINDS) {
    const at = order.indexOf(kind.kind)
    if (kind.parent !== undefined) t.ok(order.indexOf(kind.parent.kind.kind) < at, `${kind.kind} after its parent`)
    for (const linked of KINDS.filter(other => other.linkedAs !== undefined && other !== kind)) {
      if (linked.linkedAs !== undefined && linked.linkedAs in kind.fields) t.ok(order.indexOf(linked.kind) < at, `${kind.kind} after the ${linked.kind}s it links to`)
    }
  }
})

t.test('every kind says where a shared summary puts its records', async t => {
  for (const kind of KINDS) {
    t.ok(Object.keys(kind.summary.shared).length > 0, `a share's section holds ${kind.key}`)
    t.ok(Object.keys(kind.summary.shared).every(section => (SUMMARY_SECTIONS as readonly string[]).includes(section)), 'among the sections a share names')
    t.ok(kind.summary.parts.length > 0, `${kind.key} go in an IPS section`)
  }
  t.same(SUMMARY_PARTS, KINDS.flatMap(kind => kind.summary.parts), 'the summary reads them from the registry')
})

t.test('a kind\'s path and operation names come from its names', async t => {
  t.same(KINDS.map(kind => [kind.kind, kind.key, kind.table, kind.path, kind.singular, kind.plural]), [
    ['measurement', 'measurements', 'measurements', 'measurements', 'Measurement', 'Measurements'],
    ['visit', 'visits', 'visits', 'visits', 'Visit', 'Visits'],
    ['medicalEvent', 'medicalEvents', 'medical_events', 'medical-events', 'MedicalEvent', 'MedicalEvents'],
    ['illness', 'illnesses', 'illnesses', 'illnesses', 'Illness', 'Illnesses'],
    ['temperature', 'temperatures', 'temperatures', 'temperatures', 'Temperature', 'Temperatures'],
    ['medicineCourse', 'medicineCourses', 'medicine_courses', 'medicine-courses', 'MedicineCourse', 'MedicineCourses'],
    ['medicineDose', 'medicineDoses', 'medicine_doses', 'medicine-doses', 'MedicineDose', 'MedicineDoses'],
    ['allergy', 'allergies', 'allergies', 'allergies', 'Allergy', 'Allergies']
  ])
  const illness = KINDS.find(kind => kind.kind === 'illness')
  t.notOk('status' in (illness?.columns ?? {}), 'a derived field has no column')
  t.same(illness?.writable, Object.keys(illness?.fields ?? {}), 'a client writes the body\'s fields')
})
