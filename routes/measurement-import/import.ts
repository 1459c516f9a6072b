import type { FastifyInstance, FastifyRequest } from 'fastify'
import { Type, type TSchema } from '@sinclair/typebox'
import { plainDecimal, readCsv, type CsvRow, type CsvTable } from '../../lib/csv'
import { errors, withDetails } from '../../lib/errors'
import { Id, StrictObject, errorResponses, operations } from '../../lib/schemas'
import { schemaIssues } from '../../plugins/errors'
import { bodyValidator, normalizeBody } from '../../lib/validation'
import { beginChange } from '../../sql/changes'
import { insertRecords } from '../../sql/records'
import { NO_VISIT, ruleIssues, type Issue, type RecordSpec } from '../records'
import { MeasurementImportChecked, MeasurementImported, MeasurementImportQuery } from './schemas'

/** A CSV file may be this large: 10,000 rows fit easily. */
export const CSV_BODY_LIMIT = 10 * 1024 * 1024
export const MAX_ROWS = 10_000
const MAX_ISSUES = 100

type Values = Record<string, unknown>

/** The rows of a file, checked, and the file to find their lines in. */
interface Read {
  table: CsvTable
  rows: Values[]
}

/** A problem of the row at `index` of the file. */
interface Found {
  index: number
  issue: Issue
}

const DESCRIPTION = `A UTF-8 CSV file with a header row naming its columns, in any order: measuredAt (YYYY-MM-DD, required), heightCm, weightKg, headCircumferenceCm, notes. Cells are separated by , or ; (a ; when the header has one and no comma). Numbers are plain decimals with a point or a comma (3.5 or 3,5; in a file separated by commas, a decimal comma needs quotes). An empty cell leaves the value out; rows of empty cells are skipped. At most ${String(MAX_ROWS).replace(/\B(?=(\d{3})+$)/g, ',')} rows and 10 MiB.

Every row is checked as the body of POST /api/children/{childId}/measurements is, and all are created in one transaction, or none. A 400 lists the problems as { path: "/line/<n>/<column>", message }, n being the line of the file where the row starts (the header is line 1); a problem of the header is at /header/<column>, of the file as a whole at /body; at most ${MAX_ISSUES} are listed. The order of checks is that of a create: the token (401), the body's type and size (415, 413), the file and each row's values (400), the child and the caller's role (404, 403), then the rules that need the child, such as dates not before its birth (400).`

function invalid (issues: Issue[]): Error {
  const capped = issues.length > MAX_ISSUES
  return withDetails(new errors.validation(capped ? `The CSV file is not valid; the first ${MAX_ISSUES} problems are listed` : 'The CSV file is not valid'), {
    issues: issues.slice(0, MAX_ISSUES)
  })
}

/** Whether a field's schema takes numbers. */
function numeric (schema: TSchema): boolean {
  const type = schema.type as string | string[] | undefined
  return type === 'number' || (Array.isArray(type) && type.includes('number')) || (schema.anyOf as TSchema[] | undefined ?? []).some(numeric)
}

/** Issues of bodies (`/body/...`) as issues of the lines of the file their rows start on. */
async function onLines (table: CsvTable, found: Found[]): Promise<Issue[]> {
  const lines = await table.lines()
  return found.map(({ index, issue }) => ({ path: issue.path.replace(/^\/body/, `/line/${lines[index]}`), message: issue.message }))
}

/**
 * `POST /api/children/:childId/measurements/import`: a CSV file of
 * measurements, each row checked as the body of a create is, all created in
 * one transaction or none. In a scope of its own: only here is text/csv read.
 */
export function measurementImport (spec: RecordSpec) {
  // The columns are the fields of a create; a link to a visit is not one.
  const { visitId: _visitId, ...fields } = spec.fields
  const RowBody = StrictObject(fields)
  const columns = Object.keys(fields)
  const required = RowBody.required ?? []
  const numbers = new Set(columns.filter(column => numeric(fields[column])))
  // Compiled at the first import, not at start.
  let validate: ReturnType<typeof bodyValidator> | undefined

  /** A row's cells as the body of a create would hold them, and the problems of its values, as a body's. */
  function checkRow (row: CsvRow): { values: Values, issues: Issue[] } {
    const values: Values = {}
    for (const [column, cell] of Object.entries(row)) values[column] = numbers.has(column) ? plainDecimal(cell) ?? cell : cell
    normalizeBody(values, RowBody)
    validate ??= bodyValidator(RowBody)
    if (validate(values)) return { values, issues: [] }
    return { values, issues: schemaIssues(validate.errors ?? [], '/body') }
  }

  return async function importPlugin (fastify: FastifyInstance): Promise<void> {
    const read = new WeakMap<FastifyRequest, Read>()

    fastify.removeAllContentTypeParsers()
    fastify.addContentTypeParser('text/csv', { parseAs: 'string', bodyLimit: CSV_BODY_LIMIT }, (_request, body, done) => {
      done(null, body)
    })

    /**
     * The file and the values of its rows are read before the family scope,
     * as a create's body is validated before it: a malformed file is a 400
     * whoever sends it. When a row's values are wrong, the rules that need no
     * database are listed for the other rows too.
     */
    async function readFile (request: FastifyRequest): Promise<void> {
      if (typeof request.body !== 'string') throw new errors.unsupportedMediaType('The body must be a CSV file, with Content-Type: text/csv')
      const table = await readCsv(request.body, { columns, required, maxRows: MAX_ROWS })
      if (table.issues.length > 0) throw invalid(table.issues)
      const rows: Values[] = []
      const found: Found[] = []
      let wrongValues = false
      for (const [index, row] of table.rows.entries()) {
        const checked = checkRow(row)
        if (checked.issues.length > 0) wrongValues = true
        if (found.length <= MAX_ISSUES) {
          for (const issue of checked.issues.length > 0 ? checked.issues : ruleIssues(spec, checked.values, null, NO_VISIT)) found.push({ index, issue })
        } else if (wrongValues) break
        rows.push(checked.values)
      }
      if (wrongValues) throw invalid(await onLines(table, found))
      read.set(request, { table, rows })
    }

    const operation = operations([spec.path])
    fastify.post('/api/children/:childId/measurements/import', {
      bodyLimit: CSV_BODY_LIMIT,
      preValidation: readFile,
      preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child' }),
      schema: operation('importChildMeasurements', 'Add a child\'s measurements from a CSV file, all or none; dryRun=true only checks it', {
        description: DESCRIPTION,
        consumes: ['text/csv'], params: StrictObject({ childId: Id }), querystring: MeasurementImportQuery, body: Type.String({ description: 'the CSV file' }),
        response: {
          200: MeasurementImportChecked(spec.schema, columns),
          201: MeasurementImported,
          ...errorResponses(400, 401, 403, 404, 413, 415)
        }
      })
    }, async (request, reply) => {
      const { table, rows: list } = read.get(request) as Read
      const birth = request.scope.childBirth
      const found = list.flatMap((values, index) => ruleIssues(spec, values, birth, NO_VISIT).map(issue => ({ index, issue })))
      if (found.length > 0) throw invalid(await onLines(table, found))
      if ((request.query as { dryRun?: boolean }).dryRun === true) {
        const data = list.map(values => Object.fromEntries(columns.map(column => [column, values[column] ?? null])))
        return reply.code(200).send({ dryRun: true, count: data.length, data })
      }
      const childId = request.scope.childId as number
      const data = await request.db.begin(async tx => {
        await beginChange(tx, request.scope.familyId, request.user.id)
        return await insertRecords(tx, spec, childId, list, spec.derivedSql)
      })
      // The database wrote the records as the API answers them.
      return reply.code(201).type('application/json; charset=utf-8').send(`{"dryRun":false,"count":${list.length},"data":[${data}]}`)
    })
  }
}
