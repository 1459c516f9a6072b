import t from 'tap'
import { IntlMessageFormat } from 'intl-messageformat'
import { CATALOGUE, choice, longDate, text, type MessageKey } from '../lib/i18n'
import { INDICATORS } from '../lib/growth/trends'
import { LANGUAGES } from '../lib/preferences'
import { VISIT_TYPES } from '../kinds/visits'

type Element = { type: number, value?: string, options?: Record<string, { value: Element[] }> }

/** The values a message prints as they are (`{child}`), and those it only chooses its words by (`{type, select, …}`). */
function argumentsOf (elements: Element[], printed = new Set<string>(), chosen = new Set<string>()): { printed: Set<string>, chosen: Set<string> } {
  for (const element of elements) {
    // 1 argument, 2 number, 3 date, 4 time: printed; 5 select, 6 plural: a choice between texts.
    if (element.type >= 1 && element.type <= 4 && element.value !== undefined) printed.add(element.value)
    if (element.options !== undefined) {
      if (element.value !== undefined) chosen.add(element.value)
      for (const option of Object.values(element.options)) argumentsOf(option.value, printed, chosen)
    }
  }
  return { printed, chosen }
}

const english = CATALOGUE.en
const keys = Object.keys(english).sort() as MessageKey[]

t.test('every language has every message of English, and no other', async t => {
  t.ok(keys.length >= 10, `${keys.length} messages`)
  for (const language of LANGUAGES) {
    t.same(Object.keys(CATALOGUE[language]).sort(), keys, `${language}: the same keys`)
    for (const key of keys) t.ok(CATALOGUE[language][key].trim().length > 0, `${language} ${key} is not empty`)
  }
})

t.test('each translation prints the values English prints, and uses none it does not give', async t => {
  for (const key of keys) {
    const en = argumentsOf(new IntlMessageFormat(english[key], 'en').getAst() as Element[])
    const given = new Set([...en.printed, ...en.chosen])
    for (const language of LANGUAGES) {
      const ast = new IntlMessageFormat(CATALOGUE[language][key], language).getAst() as Element[]
      const own = argumentsOf(ast)
      for (const name of en.printed) t.ok(own.printed.has(name), `${language} ${key} prints {${name}}`)
      for (const name of [...own.printed, ...own.chosen]) t.ok(given.has(name), `${language} ${key}: {${name}} is one of English's values`)
    }
  }
})

t.test('every visit type has its own words in every language', async t => {
  for (const language of LANGUAGES) {
    const [choice] = new IntlMessageFormat(CATALOGUE[language]['reminder.visit'], language).getAst() as Element[]
    t.same(Object.keys(choice.options ?? {}).sort(), [...VISIT_TYPES, 'other'].sort(), `${language}: one text per visit type`)
    const texts = new Set(VISIT_TYPES.map(type => text(language, 'reminder.visit', { type })))
    t.equal(texts.size, VISIT_TYPES.length, `${language}: no two types read alike`)
  }
})

t.test('messages and dates as each language writes them', async t => {
  t.equal(text('en', 'reminder.body', { child: 'Kim', what: 'dental visit', date: longDate('en', '2026-03-05') }), 'Kim: dental visit on March 5, 2026')
  t.equal(text('de', 'reminder.body', { child: 'Kim', what: 'Zahnarzttermin', date: longDate('de', '2026-03-05') }), 'Kim: Zahnarzttermin am 5. März 2026')
  t.equal(text('fr', 'reminder.body', { child: 'Kim', what: 'x', date: longDate('fr', '2026-03-05') }), 'Kim : x le 5 mars 2026')
  t.equal(text('es', 'reminder.body', { child: 'Kim', what: 'x', date: longDate('es', '2026-03-05') }), 'Kim: x el 5 de marzo de 2026')
  t.equal(text('en', 'reminder.vaccineDose', { vaccine: 'MMR', named: 'no', dose: 2 }), 'MMR vaccine dose 2')
  t.equal(text('en', 'reminder.vaccineDose', { vaccine: 'Rotavirus vaccine', named: 'yes', dose: 2 }), 'Rotavirus vaccine dose 2')
  t.equal(text('de', 'reminder.vaccineDose', { vaccine: 'MMR', named: 'no', dose: 2 }), 'Impfung MMR, Dosis 2')
  t.equal(longDate('en', '2024-02-29'), 'February 29, 2024', 'a date is not moved by any time zone')
})

t.test('every growth indicator, alert, sex and due status of the report has its own words in every language', async t => {
  const chartIndicators = ['weight-for-age', 'height-for-age', 'head-circumference-for-age', 'bmi-for-age', 'weight-for-length']
  for (const language of LANGUAGES) {
    const distinct = (key: MessageKey, name: string, values: string[], extra: Record<string, string> = {}): void => {
      const texts = new Set(values.map(value => text(language, key, { ...extra, [name]: choice(value) })))
      t.equal(texts.size, values.length, `${language} ${key}: one text for each of ${values.join(', ')}`)
    }
    distinct('report.indicator', 'indicator', [...INDICATORS])
    distinct('report.chartTitle', 'indicator', chartIndicators)
    distinct('report.alert', 'kind', ['crossing-down', 'crossing-up', 'flagged'], { date: 'd', indicator: 'i' })
    distinct('report.sexValue', 'sex', ['female', 'male', 'other'])
    distinct('report.due', 'status', ['due', 'overdue', 'upcoming'], { date: 'd' })
    distinct('report.axis', 'quantity', ['months', 'years', 'weight', 'length', 'head', 'bmi'], { unit: 'u' })
  }
  t.equal(text('en', 'report.ageValue', { years: 1, months: 1 }), '1 year, 1 month', 'English: one')
  t.equal(text('en', 'report.ageValue', { years: 2, months: 0 }), '2 years, 0 months', 'English: other')
  t.equal(text('de', 'report.ageValue', { years: 1, months: 5 }), '1 Jahr, 5 Monate')
  t.equal(text('fr', 'report.ageValue', { years: 1, months: 1 }), '1 an, 1 mois')
  t.equal(text('fr', 'report.ageValue', { years: 0, months: 3 }), '0 an, 3 mois', 'French counts 0 as one, by CLDR')
  t.equal(text('es', 'report.ageValue', { years: 3, months: 1 }), '3 años, 1 mes')
})
