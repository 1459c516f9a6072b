import t from 'tap'
import { build, call, familyOf, join, register, type App, type Pair } from './helper'
import { mailServer, ntfyServer, until } from './reminder-receivers'
import { addChild, addVaccine, addVisit, setChannels, spelled, utcDays } from './reminder-data'

const TEST_TITLES = new Set(['Child health: test message', 'Kindergesundheit: Testnachricht', 'Santé de l’enfant : message de test', 'Salud infantil: mensaje de prueba'])

async function prefer (app: App, pair: Pair, preferences: Record<string, string>): Promise<void> {
  const res = await call(app, pair, 'PATCH', '/api/me', { preferences })
  if (res.statusCode !== 200) throw new Error(`PATCH /api/me answered ${res.statusCode}: ${res.body}`)
}

t.test('each member reads a reminder in their own language, with dates and times as it writes them in their time zone', async t => {
  const mail = await mailServer(t)
  const ntfy = await ntfyServer(t)
  const app = await build(t, {
    env: { SMTP_URL: mail.url, MAIL_FROM: 'Child health <reminders@example.org>', WEBHOOK_ALLOW_PRIVATE: 'true', REGISTRATION: 'open', JOB_WORKER: 'on' }
  })
  const days = await utcDays(app)
  const owner = await register(app)
  const familyId = familyOf(owner)
  const french = await register(app)
  const spanish = await register(app)
  const english = await register(app)
  for (const member of [french, spanish, english]) await join(app, owner, familyId, member, 'member')
  await prefer(app, owner, { language: 'de', timeZone: 'Europe/Berlin' })
  await prefer(app, french, { language: 'fr', timeZone: 'America/Montreal' })
  await prefer(app, spanish, { language: 'es', units: 'imperial' })

  const kim = await addChild(app, owner, familyId, 'Kim Lindqvist', days.birth)
  await addVaccine(app, owner, kim, { name: 'MMR', date: '2025-03-05', doseNumber: 1, nextDueDate: '2026-03-05' })
  await addVisit(app, owner, kim, days.tomorrow, 'dental')
  const course = await call(app, owner, 'POST', `/api/children/${kim}/medicine-courses`, {
    name: 'Ibuprofen', doseAmount: 5, doseUnit: 'ml', minIntervalHours: 4, startDate: days.yesterday, remind: true
  })
  t.equal(course.statusCode, 201, course.body)
  const given = await call(app, owner, 'POST', `/api/medicine-courses/${course.json().id}/doses`, { givenAt: new Date(Date.now() - 5 * 3600_000).toISOString() })
  t.equal(given.statusCode, 201, given.body)
  const allowedAt = new Date((await call(app, owner, 'GET', `/api/medicine-courses/${course.json().id}`)).json().nextDoseAllowedAt)
  const timeIn = (language: string, timeZone: string): string => new Intl.DateTimeFormat(language, { timeStyle: 'short', timeZone }).format(allowedAt)
  const dayIn = (timeZone: string): string => new Intl.DateTimeFormat('en-CA', { timeZone, year: 'numeric', month: '2-digit', day: '2-digit' }).format(allowedAt)

  const readers = [
    { who: owner, topic: '/de', language: 'de', zone: 'Europe/Berlin', title: 'Erinnerung für Kim', test: 'Kindergesundheit: Testnachricht' },
    { who: french, topic: '/fr', language: 'fr', zone: 'America/Montreal', title: 'Rappel pour Kim', test: 'Santé de l’enfant : message de test' },
    { who: spanish, topic: '/es', language: 'es', zone: 'UTC', title: 'Recordatorio para Kim', test: 'Salud infantil: mensaje de prueba' },
    { who: english, topic: '/en', language: 'en', zone: 'UTC', title: 'Reminder for Kim', test: 'Child health: test message' }
  ]
  const expected: Record<string, string[]> = {
    de: [
      `Kim: Impfung MMR, Dosis 2 am 5. März 2026`,
      `Kim: Zahnarzttermin am ${spelled(days.tomorrow, 'de')}`,
      `Kim: nächste Dosis Ibuprofen ab ${timeIn('de', 'Europe/Berlin')} Uhr erlaubt am ${spelled(dayIn('Europe/Berlin'), 'de')}`
    ],
    fr: [
      `Kim : vaccin MMR, dose 2 le 5 mars 2026`,
      `Kim : rendez-vous chez le dentiste le ${spelled(days.tomorrow, 'fr')}`,
      `Kim : prochaine dose de Ibuprofen autorisée à partir de ${timeIn('fr', 'America/Montreal')} le ${spelled(dayIn('America/Montreal'), 'fr')}`
    ],
    es: [
      `Kim: vacuna MMR, dosis 2 el 5 de marzo de 2026`,
      `Kim: cita con el dentista el ${spelled(days.tomorrow, 'es')}`,
      `Kim: próxima dosis de Ibuprofen permitida desde las ${timeIn('es', 'UTC')} el ${spelled(dayIn('UTC'), 'es')}`
    ],
    en: [
      'Kim: MMR vaccine dose 2 on March 5, 2026',
      `Kim: dental visit on ${spelled(days.tomorrow)}`,
      `Kim: next dose of Ibuprofen allowed from ${timeIn('en', 'UTC')} on ${spelled(dayIn('UTC'))}`
    ]
  }
  for (const reader of readers) await setChannels(app, reader.who, [{ type: 'ntfy', url: ntfy.origin + reader.topic }])
  await setChannels(app, owner, [{ type: 'ntfy', url: ntfy.origin + '/de' }, { type: 'email', address: owner.user.email }])

  const posts = (topic: string) => ntfy.posts.filter(post => post.path === topic && !TEST_TITLES.has(post.title))
  await until(() => readers.every(reader => posts(reader.topic).length >= 3), 30_000, 'three reminders for each reader')
  for (const reader of readers) {
    const own = ntfy.posts.filter(post => post.path === reader.topic)
    t.ok(own.some(post => post.title === reader.test), `${reader.language}: the test message in the reader's language`)
    const reminders = own.filter(post => post.title !== reader.test)
    t.same(reminders.map(post => post.text).sort(), [...expected[reader.language]].sort(), `${reader.language}: each reminder in the reader's language`)
    t.ok(reminders.every(post => post.title === reader.title), `${reader.language}: titled ${reader.title}`)
  }
  await until(() => mail.mails.filter(m => m.subject === 'Erinnerung für Kim').length >= 3, 30_000, 'the e-mails')
  t.same(mail.mails.filter(m => m.subject === 'Erinnerung für Kim').map(m => m.text.trim()).sort(), [...expected.de].sort(), 'e-mail in German too')
})
