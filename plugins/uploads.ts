import fp from 'fastify-plugin'
import type { onSendAsyncHookHandler, preValidationAsyncHookHandler } from 'fastify'
import { mkdir } from 'node:fs/promises'
import { receiveUpload, type Upload, type UploadRules } from './receive-upload'
import { removeQuietly } from '../io/files/store'
import { sweepOrphans } from '../io/files/sweep'
import { ARCHIVE_TYPES, ATTACHMENT_TYPES, AVATAR_TYPES } from '../io/files/types'
import { LOCKS, whileLocked } from '../db/locks'
import { ConfigError } from '../io/config'
import { errors } from '../lib/errors'
import { CLOSE_WAIT_MS, settledWithin } from '../lib/waiting'
import { storedNamesInUse } from '../sql/attachments'
import { avatarNamesInUse } from '../sql/children'
import { ATTACHMENT_LINK_FIELDS } from '../lib/attachment-links'

export type UploadKind = 'attachment' | 'avatar' | 'archive'

export interface UploadHooks {
  preValidation: preValidationAsyncHookHandler
  onSend: onSendAsyncHookHandler
}

declare module 'fastify' {
  interface FastifyRequest {
    /** The file received by an upload route, until it is stored. */
    upload: Upload | null
  }
  interface FastifyInstance {
    uploadHooks: (kind: UploadKind) => UploadHooks
  }
}

/**
 * File storage: the upload and avatar directories, made at start, and the
 * hooks of the upload routes. The upload is read before validation (it is the
 * request's body), so the usual order of checks holds; its temporary file is
 * removed once the answer is sent or the connection closes, unless the route
 * stored it.
 */
export default fp(async function uploads (fastify) {
  const { config } = fastify
  for (const [setting, dir] of [['UPLOAD_DIR', config.uploadDir], ['AVATAR_DIR', config.avatarDir]]) {
    try {
      await mkdir(dir, { recursive: true })
    } catch (error) {
      throw new ConfigError(setting, `cannot be used: ${(error as Error).message}`)
    }
  }

  // Files a stopped process left without their row are removed in the
  // background once the service is up, by one instance at a time: another
  // that finds the sweep under way leaves it to that one.
  // The close waits for it a little: files it has not reached stay for the next start.
  let sweeping: Promise<void> = Promise.resolve()
  let closing = false
  fastify.addHook('onReady', async () => {
    const { sql } = fastify
    const sweep = () => Promise.all([
      sweepOrphans(config.uploadDir, names => storedNamesInUse(sql, names)),
      sweepOrphans(config.avatarDir, names => avatarNamesInUse(sql, names))
    ])
    sweeping = whileLocked(sql, LOCKS.orphanSweep, sweep, { wait: false }).then(
      outcome => {
        if (!outcome.ran) {
          fastify.log.info('another instance is sweeping orphaned files')
          return
        }
        const [uploads, avatars] = outcome.result
        // Counts only: a stored name is the file's address.
        if (uploads.length + avatars.length > 0) fastify.log.warn({ uploads: uploads.length, avatars: avatars.length }, 'removed files left without their rows')
      },
      error => {
        if (closing) fastify.log.info({ err: error }, 'the sweep of orphaned files stopped with the service')
        else fastify.log.warn({ err: error }, 'the sweep of orphaned files failed')
      }
    )
  })
  fastify.addHook('preClose', async () => {
    closing = true
    await settledWithin(sweeping, CLOSE_WAIT_MS)
  })

  // Only an archive, up to MAX_IMPORT_SIZE, must keep a minimum rate: files and
  // avatars are small, the 60 s body deadline bounds them, and a phone's short
  // pause should not cost them.
  const noMinimum = { minRate: 0, rateWindowMs: config.uploadRateWindow }
  const rules: Record<UploadKind, UploadRules> = {
    attachment: { dir: config.uploadDir, maxSize: config.maxFileSize, types: ATTACHMENT_TYPES, fields: ATTACHMENT_LINK_FIELDS, ...noMinimum },
    avatar: { dir: config.avatarDir, maxSize: config.maxFileSize, types: AVATAR_TYPES, fields: [], ...noMinimum },
    archive: { dir: config.uploadDir, maxSize: config.maxImportSize, types: ARCHIVE_TYPES, fields: [], minRate: config.uploadMinRate, rateWindowMs: config.uploadRateWindow }
  }

  fastify.decorateRequest('upload', null)

  fastify.decorate('uploadHooks', function (kind: UploadKind): UploadHooks {
    return {
      async preValidation (request, reply) {
        const received = await receiveUpload(request, rules[kind]).catch(error => {
          // The rest of a body that came too slowly is not waited for.
          if (error instanceof errors.requestTimeout) reply.header('connection', 'close')
          throw error
        })
        request.upload = received
        // The route may replace the upload (an avatar by its re-encoding): whatever it holds then goes.
        reply.raw.once('close', () => { if (request.upload !== null) void removeQuietly(request.upload.path) })
        request.body = { file: received.fileName, ...received.fields }
      },
      async onSend (request, _reply, payload) {
        if (request.upload !== null) await removeQuietly(request.upload.path)
        return payload
      }
    }
  })
}, { name: 'uploads', dependencies: ['config', 'db'] })
