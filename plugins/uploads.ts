import fp from 'fastify-plugin'
import type { onSendAsyncHookHandler, preValidationAsyncHookHandler } from 'fastify'
import { mkdir } from 'node:fs/promises'
import { encodeAvatar } from '../lib/files/avatar'
import { receiveUpload, type Upload, type UploadRules } from '../lib/files/receive'
import { removeQuietly } from '../lib/files/store'
import { sweepOrphans } from '../lib/files/sweep'
import { ATTACHMENT_TYPES, AVATAR_TYPES } from '../lib/files/types'
import { ConfigError } from './config'

export type UploadKind = 'attachment' | 'avatar'

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
  // background once the service is up.
  fastify.addHook('onReady', async () => {
    const { sql } = fastify
    const sweeps = [
      sweepOrphans(config.uploadDir, async names => new Set((await sql<{ name: string }[]>`
        select stored_name as name from attachments where stored_name in ${sql(names)}
      `).map(row => row.name))),
      sweepOrphans(config.avatarDir, async names => new Set((await sql<{ name: string }[]>`
        select avatar_name as name from children where avatar_name in ${sql(names)}
      `).map(row => row.name)))
    ]
    Promise.all(sweeps).then(
      ([uploads, avatars]) => {
        if (uploads.length + avatars.length > 0) fastify.log.warn({ uploads, avatars }, 'removed files left without their rows')
      },
      error => fastify.log.warn({ err: error }, 'the sweep of orphaned files failed')
    )
  })

  const rules: Record<UploadKind, UploadRules> = {
    attachment: { dir: config.uploadDir, maxSize: config.maxFileSize, types: ATTACHMENT_TYPES, fields: ['visitId', 'measurementId', 'illnessId'] },
    avatar: { dir: config.avatarDir, maxSize: config.maxFileSize, types: AVATAR_TYPES, fields: [] }
  }

  fastify.decorateRequest('upload', null)

  fastify.decorate('uploadHooks', function (kind: UploadKind): UploadHooks {
    return {
      async preValidation (request, reply) {
        let upload = await receiveUpload(request, rules[kind])
        if (kind === 'avatar') upload = await encodeAvatar(upload)
        const received = upload
        request.upload = received
        reply.raw.once('close', () => { void removeQuietly(received.path) })
        request.body = { file: received.fileName, ...received.fields }
      },
      async onSend (request, _reply, payload) {
        if (request.upload !== null) await removeQuietly(request.upload.path)
        return payload
      }
    }
  })
}, { name: 'uploads', dependencies: ['config', 'db'] })
