import type { FastifyPluginAsyncTypebox } from '@fastify/type-provider-typebox'
import type { FastifyReply, FastifyRequest } from 'fastify'
import { attachmentDisposition } from '../../lib/export/file-names'
import { apiRow } from '../../lib/export/rows'
import { ExportSlots } from '../../lib/export/slots'
import { Spool } from '../../io/export/spool'
import { ZipWriter } from '../../io/export/zip'
import { errors } from '../../lib/errors'
import { ConditionalRead, NotModified, errorResponses, operations } from '../../lib/schemas'
import { exportSnapshot, familyChildren, familyMemberNames, SNAPSHOT } from '../../sql/export'
import { findFamily } from '../../sql/families'
import { Growth, GrowthPoint, GrowthScore } from '../../lib/growth/schemas'
import { headersOnly, isHead } from '../head'
import { exportHead, readChild, writeChildBundle, writeChildDocument } from '../../domain/export/child-records'
import { spoolFamily, writeFamilyArchive } from '../../domain/export/family-archive'
import {
  ChildExport, ChildExportParams, ChildExportQuery, ChildExportResponse, FamilyExportParams, FamilyExportResponse, FhirBundle
} from './schemas'
import { disconnectSignal, endWith, watchProgress } from './streaming'

/** When a client that found no export slot free may try again, in seconds. */
const RETRY_AFTER = 10
/** Exports one user may have open at once, from the request until the download ends. */
const OPEN_PER_USER = 2

const FAIR_USE = 'An export is read from the database into a temporary file before anything is sent. ' +
  `Reading takes one of EXPORT_CONCURRENCY (default 4) slots shared by every user (at most ${OPEN_PER_USER} of them one user's), given back before the download starts; ` +
  `a user may have at most ${OPEN_PER_USER} exports open at once, downloads included. Beyond either, 429 with Retry-After. ` +
  'A download whose client takes none of the bytes waiting for it for 60 s (DOWNLOAD_IDLE_TIMEOUT) is ended; reading the export from the database does not count. HEAD answers the headers of a GET and reads nothing.'

interface Started {
  spool: Spool
  /** Gives the export slot back once the spool is written: a download holds none. */
  built: () => void
}

/**
 * Exports: a child's whole record as JSON or as a FHIR R4 bundle, and a
 * family's as a ZIP archive. Each is read in one short snapshot into a spool
 * file; the database connection and the export slot are given back before the
 * first byte goes to the client, so a slow download holds a file handle and
 * nothing else, and only its own user's count of open exports.
 */
const exportRoutes: FastifyPluginAsyncTypebox = async function (fastify) {
  const { config } = fastify
  const tags = ['export']
  const operation = operations(tags)
  const building = new ExportSlots(config.exportConcurrency, OPEN_PER_USER)
  const open = new ExportSlots(Infinity, OPEN_PER_USER)
  // The growth document's schemas live in the growth routes' scope; the export refers to them too.
  for (const schema of [GrowthScore, GrowthPoint, Growth, ChildExport, FhirBundle]) fastify.addSchema(schema)

  function refused (reply: FastifyReply, message: string): Error {
    reply.header('retry-after', String(RETRY_AFTER))
    return new errors.rateLimited(`${message}; retry in ${RETRY_AFTER} seconds`)
  }

  /**
   * Counts the export among its user's open ones, takes an export slot, and
   * opens a spool; the slot goes back when `built` is called, the rest when
   * the response ends, however it ends. A download whose client takes no waiting byte
   * for DOWNLOAD_IDLE_TIMEOUT is cut.
   */
  async function begin (request: FastifyRequest, reply: FastifyReply): Promise<Started> {
    const userId = request.user.id
    const leave = open.take(userId)
    if (leave === null) throw refused(reply, `At most ${OPEN_PER_USER} exports of one user may be open at once`)
    const built = building.take(userId)
    if (built === null) {
      leave()
      throw refused(reply, 'Too many exports at once')
    }
    let spool: Spool
    try {
      spool = await Spool.open(config.uploadDir)
    } catch (error) {
      built()
      leave()
      throw error
    }
    const stopWatching = watchProgress(reply, config.downloadIdleTimeout, () => {
      request.log.info('export ended: the download made no progress')
      reply.raw.destroy()
    })
    reply.raw.once('close', () => {
      stopWatching()
      built()
      leave()
      void spool.close()
      if (!reply.raw.writableFinished) request.log.info('export stopped: the client disconnected')
    })
    return { spool, built }
  }

  function download (reply: FastifyReply, disposition: string, type: string): FastifyReply {
    return reply.header('content-disposition', disposition).header('cache-control', 'no-store').type(type)
  }

  function childDownload (reply: FastifyReply, name: string, day: string, fhir: boolean): FastifyReply {
    const disposition = attachmentDisposition(name, 'child', day, fhir ? '.fhir.json' : '.json')
    return download(reply, disposition, fhir ? 'application/fhir+json; charset=utf-8' : 'application/json; charset=utf-8')
  }

  function familyDownload (reply: FastifyReply, name: string, day: string): FastifyReply {
    return download(reply, attachmentDisposition(name, 'family', day, '.zip'), 'application/zip')
  }

  const today = (): string => new Date().toISOString().slice(0, 10)

  fastify.get('/api/children/:childId/export', {
    preHandler: fastify.familyScope({ target: { child: 'params.childId' }, name: 'Child', etag: 'child' }),
    schema: operation('exportChild', 'A child\'s whole record, as one JSON document or a FHIR R4 bundle', {
      description: 'Read from the database at one moment. Any member of the child\'s family may export it, viewers included. The body is an attachment named after the child and the date (`.json`, or `.fhir.json` with format=fhir). ' + FAIR_USE,
      params: ChildExportParams, querystring: ChildExportQuery, headers: ConditionalRead,
      response: { 200: ChildExportResponse, 304: NotModified, ...errorResponses(400, 401, 403, 404, 429) }
    })
  }, async (request, reply) => {
    const fhir = request.query.format === 'fhir'
    const childId = request.params.childId
    if (isHead(request)) {
      const child = await readChild(request.db, childId)
      if (child === undefined) throw new errors.notFound('Child')
      return headersOnly(childDownload(reply, child.name, today(), fhir))
    }
    const signal = disconnectSignal(reply)
    const { spool, built } = await begin(request, reply)
    const { head, child } = await request.db.begin(SNAPSHOT, async tx => {
      const head = exportHead(await exportSnapshot(tx))
      const child = await readChild(tx, childId)
      if (child === undefined) throw new errors.notFound('Child')
      await spool.write('body', signal, async out => {
        const charts = { who: fastify.growth.tables, cdc: fastify.growth.cdc }
        if (fhir) await writeChildBundle(out, tx, child, head.exportedAt, charts)
        else await writeChildDocument(out, tx, head, child, charts)
      })
      return { head, child }
    })
    built()
    return childDownload(reply, child.name, head.exportedAt.slice(0, 10), fhir).send(spool.read('body'))
  })

  fastify.get('/api/families/:id/export', {
    preHandler: fastify.familyScope({ target: { family: 'params.id' }, role: 'owner', etag: 'family' }),
    schema: operation('exportFamily', 'A family\'s whole record, files included, as a ZIP archive (owner)', {
      description: 'Read from the database at one moment, then streamed as it is written; the files are streamed from disk. ' + FAIR_USE,
      params: FamilyExportParams, headers: ConditionalRead,
      response: { 200: FamilyExportResponse, 304: NotModified, ...errorResponses(400, 401, 403, 404, 429) }
    })
  }, async (request, reply) => {
    const familyId = request.scope.familyId
    if (isHead(request)) {
      const family = await findFamily(request.db, request.user.id, familyId)
      if (family === undefined) throw new errors.notFound('Family')
      return headersOnly(familyDownload(reply, family.name, today()))
    }
    const signal = disconnectSignal(reply)
    const { spool, built } = await begin(request, reply)
    const options = {
      charts: { who: fastify.growth.tables, cdc: fastify.growth.cdc },
      uploadDir: config.uploadDir,
      avatarDir: config.avatarDir,
      serviceVersion: config.version,
      log: request.log
    }
    const spooled = await request.db.begin(SNAPSHOT, async tx => {
      const snapshot = await exportSnapshot(tx)
      const family = await findFamily(tx, request.user.id, familyId)
      if (family === undefined) throw new errors.notFound('Family')
      return spoolFamily(spool, tx, {
        head: exportHead(snapshot),
        family: apiRow(family),
        members: await familyMemberNames(tx, familyId),
        children: await familyChildren(tx, familyId)
      }, options, signal)
    })
    built()
    const { head, family } = spooled.family
    const zip = new ZipWriter(signal, new Date(head.exportedAt))
    endWith(request, zip.output, writeFamilyArchive(zip, spool, spooled, options), signal, () => {})
    return familyDownload(reply, family.name, head.exportedAt.slice(0, 10)).send(zip.output)
  })
}

export default exportRoutes
