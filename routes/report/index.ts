import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { Type } from '@sinclair/typebox'
import { childReport, REPORT_CHARTS, type ReportChart } from '../../domain/report'
import type { GrowthReference } from '../../lib/growth/charts'
import { errors, invalidRequest } from '../../lib/errors'
import { LANGUAGES, UNIT_SYSTEMS, type Language, type UnitSystem } from '../../lib/preferences'
import { GROWTH_REFERENCES } from '../../lib/growth/charts'
import { errorResponses, Id, IsoDate, operations, StrictObject } from '../../lib/schemas'
import { preferencesOf } from '../../sql/users'
import { dayIn } from '../../lib/days'

const operation = operations(['growth'])

const ReportParams = StrictObject({ childId: Id })
const ReportQuery = Type.Object({
  reference: Type.Optional(Type.String({ enum: [...GROWTH_REFERENCES], description: 'The charts: who, cdc or auto. Default: the child\'s growthReference' })),
  charts: Type.Optional(Type.String({
    pattern: `^(${REPORT_CHARTS.join('|')})(,(${REPORT_CHARTS.join('|')}))*$`,
    description: `The chart pages, a comma list of ${REPORT_CHARTS.join(', ')}. Default: each that has data`,
    examples: ['weight,height']
  })),
  from: Type.Optional(IsoDate),
  to: Type.Optional(IsoDate),
  units: Type.Optional(Type.String({ enum: [...UNIT_SYSTEMS], description: 'Default: the caller\'s preferences. Metric prints on A4, imperial on US Letter' })),
  lang: Type.Optional(Type.String({ enum: [...LANGUAGES], description: 'Default: the caller\'s preferences' }))
})

/** A file name of the child's name and the day, in ASCII; the full name goes in filename*. */
function disposition (name: string, today: string): string {
  const file = `${name}-growth-report-${today}.pdf`
  const ascii = file.normalize('NFKD').replace(/[^\x20-\x7e]/g, '').replace(/["\\/;]/g, '').replace(/\s+/g, '-')
  return `attachment; filename="${ascii}"; filename*=UTF-8''${encodeURIComponent(file.replace(/\s+/g, '-'))}`
}

const report: FastifyPluginAsyncTypebox = async function (fastify) {
  fastify.get('/api/children/:childId/report.pdf', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child' }),
    schema: operation('getChildReport', 'A printable growth report of a child, as a PDF', {
      description: 'Any member of the family, viewers too. A first page with the child (name, date of birth, sex, age and corrected age while it applies), the chart used, the red flags of the growth answer and the vaccines given and due; ' +
        'the measurements with each score\'s percentile; then one page per chart as a clinic\'s chart looks: the reference\'s centile lines (WHO 3rd, 15th, 50th, 85th, 97th; CDC 5th, 10th, 25th, 50th, 75th, 90th, 95th), labelled axes in the chosen units and the child\'s points joined in order, at corrected age while it applies. ' +
        'Every text in the caller\'s language and units (or lang and units), in an embedded font; every line a vector, no raster image. A4 for metric, US Letter for imperial. ' +
        'Without WHO\'s tables (reference who or auto) the charts are left out and the first page says why.',
      params: ReportParams,
      querystring: ReportQuery,
      response: {
        200: {
          description: 'The report',
          headers: { 'content-disposition': Type.String({ description: 'attachment, naming the child and the day' }) },
          content: { 'application/pdf': { schema: Type.String({ format: 'binary' }) } }
        },
        ...errorResponses(400, 401, 403, 404)
      }
    })
  }, async (request, reply) => {
    const { childId } = request.params
    const { reference, charts, from, to, units, lang } = request.query
    if (from !== undefined && to !== undefined && from > to) throw invalidRequest([{ path: '/querystring/to', message: 'must not be before from' }])
    const preferences = await preferencesOf(request.db, request.user.id)
    const today = dayIn(new Date(), preferences?.timeZone ?? 'UTC')
    const made = await childReport(request.db, reference => fastify.growth.charts(reference), {
      childId,
      reference: reference as GrowthReference | undefined,
      charts: charts === undefined ? undefined : [...new Set(charts.split(','))] as ReportChart[],
      from,
      to,
      units: (units as UnitSystem | undefined) ?? preferences?.units ?? 'metric',
      language: (lang as Language | undefined) ?? preferences?.language ?? 'en',
      today
    })
    if (made === undefined) throw new errors.notFound('Child')
    return reply
      .type('application/pdf')
      .header('content-disposition', disposition(made.name, today))
      .header('cache-control', 'private, no-store')
      .send(made.pdf as never)
  })
}

export default report
