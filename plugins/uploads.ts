import fp from 'fastify-plugin'
import type { onSendAsyncHookHandler, preValidationAsyncHookHandler } from 'fastify'
import { mkdir, readdir, stat } from 'node:fs/promises'
import path from 'node:path'
import { encodeAvatar } from '../lib/files/avatar'
import { TEMPORARY_NAME } from '../lib/files/names'
import { receiveUpload, type Upload, type UploadRules } from '../lib/files/receive'
import { removeQuietly } from '../lib/files/store'
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

/** Temporary files older than this are left over from a stopped process. */
const STALE_MS = 24 * 60 * 60 * 1000

async function removeStale (dir: string): Promise<void> {
  for (const name of await readdir(dir)) {
    if (!TEMPORARY_NAME.test(name)) continue
    const file = path.join(dir, name)
    const info = await stat(file).catch(() => undefined)
    if (info !== undefined && Date.now() - info.mtimeMs > STALE_MS) await removeQuietly(file)
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
      await removeStale(dir)
    } catch (error) {
      throw new ConfigError(setting, `cannot be used: ${(error as Error).message}`)
    }
  }

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
}, { name: 'uploads', dependencies: ['config'] })
