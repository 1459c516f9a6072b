import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import { PassThrough } from 'node:stream'
import { writeBundle } from '../../lib/export/bundle'
import { attachmentDisposition } from '../../lib/export/file-names'
import { Output } from '../../lib/export/output'
import { apiRow } from '../../lib/export/rows'
import { inSnapshot } from '../../lib/export/snapshot'
import { ZipWriter } from '../../lib/export/zip'
import { errors } from '../../lib/errors'
import { childBundle } from '../../lib/fhir'
import { errorResponses } from '../../lib/schemas'
import { exportSnapshot, familyChildren, familyMemberNames } from '../../sql/export'
import { findFamily } from '../../sql/families'
import { Growth, GrowthPoint, GrowthScore } from '../growth/schemas'
import { exportHead, readChild, readChildRecords, writeChildDocument } from './child-records'
import { writeFamilyArchive } from './family-archive'
import {
  ChildExport, ChildExportParams, ChildExportQuery, ChildExportResponse, FamilyExportParams, FamilyExportResponse, FhirBundle
} from './schemas'
import { disconnectSignal, endWith } from './streaming'

/**
 * Exports: a child's whole record as JSON or as a FHIR R4 bundle, and a
 * family's as a ZIP archive. Each is read in one snapshot and streamed.
 */
const exportRoutes: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config, sql } = fastify
  const tags = ['export']
  const security = [{ bearer: [] }]
  // The growth document's schemas live in the growth routes' scope; the export refers to them too.
  for (const schema of [GrowthScore, GrowthPoint, Growth, ChildExport, FhirBundle]) fastify.addSchema(schema)

  fastify.get('/api/children/:childId/export', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child' }),
    schema: {
      operationId: 'exportChild',
      tags,
      summary: 'A child\'s whole record, as one JSON document or a FHIR R4 bundle',
      description: 'Read from the database at one moment and streamed. Any member of the child\'s family may export it, viewers included. The body is an attachment named after the child and the date (`.json`, or `.fhir.json` with format=fhir).',
      security,
      params: ChildExportParams,
      querystring: ChildExportQuery,
      response: { 200: ChildExportResponse, ...errorResponses(400, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const fhir = request.query.format === 'fhir'
    const childId = request.params.childId
    const signal = disconnectSignal(reply)
    const body = new PassThrough()
    const started = await inSnapshot(sql, async tx => {
      const head = exportHead(await exportSnapshot(tx))
      const child = await readChild(tx, childId)
      if (child === undefined) throw new errors.notFound('Child')
      const bundle = fhir ? childBundle(await readChildRecords(tx, child), { timestamp: head.exportedAt }) : null
      return { head, child, bundle }
    }, async (tx, { head, child, bundle }) => {
      const out = new Output(body, signal)
      if (bundle !== null) await writeBundle(out, bundle)
      else await writeChildDocument(out, tx, head, child, fastify.growth.tables)
    })
    endWith(request, body, started.done, signal, () => body.end())
    const { head, child } = started.head
    return reply
      .header('content-disposition', attachmentDisposition(child.name, 'child', head.exportedAt.slice(0, 10), fhir ? '.fhir.json' : '.json'))
      .header('cache-control', 'no-store')
      .type(fhir ? 'application/fhir+json; charset=utf-8' : 'application/json; charset=utf-8')
      .send(body)
  })

  fastify.get('/api/families/:id/export', {
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, role: 'owner' }),
    schema: {
      operationId: 'exportFamily',
      tags,
      summary: 'A family\'s whole record, files included, as a ZIP archive (owner)',
      description: 'Read from the database at one moment and streamed as it is written; the files are streamed from disk.',
      security,
      params: FamilyExportParams,
      response: { 200: FamilyExportResponse, ...errorResponses(400, 401, 403, 404) }
    }
  }, async (request, reply) => {
    const familyId = request.scope.familyId
    const signal = disconnectSignal(reply)
    const started = await inSnapshot(sql, async tx => {
      const snapshot = await exportSnapshot(tx)
      const family = await findFamily(tx, request.user.id, familyId)
      if (family === undefined) throw new errors.notFound('Family')
      return {
        zip: new ZipWriter(signal, snapshot.exportedAt),
        head: exportHead(snapshot),
        family: apiRow(family),
        members: await familyMemberNames(tx, familyId),
        children: await familyChildren(tx, familyId)
      }
    }, (tx, { zip, ...family }) => writeFamilyArchive(zip, tx, family, {
      tables: fastify.growth.tables,
      uploadDir: config.uploadDir,
      avatarDir: config.avatarDir,
      serviceVersion: config.version,
      log: request.log
    }))
    const { head, family, zip } = started.head
    endWith(request, zip.output, started.done, signal, () => {})
    return reply
      .header('content-disposition', attachmentDisposition(family.name, 'family', head.exportedAt.slice(0, 10), '.zip'))
      .header('cache-control', 'no-store')
      .type('application/zip')
      .send(zip.output)
  })
}

export default exportRoutes
