import type {} from '@fastify/multipart'
import type { FastifyRequest } from 'fastify'
import { createHash } from 'node:crypto'
import { createWriteStream } from 'node:fs'
import path from 'node:path'
import { Transform, type Readable } from 'node:stream'
import { pipeline } from 'node:stream/promises'
import { errors, withDetails } from '../lib/errors'
import { DECIMAL_INTEGER } from '../lib/schemas'
import { cleanFileName, temporaryName } from '../lib/files/names'
import { removeQuietly } from '../io/files/store'
import { detectType } from '../io/files/types'
import type { Upload, UploadRules } from '../io/files/upload'

export type { Upload, UploadRules }

interface Received {
  path: string
  size: number
  sha256: string
  fileName: string | undefined
}

const FILE_FIELD = 'file'

function invalidBody (message: string): Error {
  return new errors.invalidBody(message)
}

type FieldSchema = { type?: unknown } | undefined

function takes (schema: FieldSchema, type: string): boolean {
  return schema?.type === type || (Array.isArray(schema?.type) && schema.type.includes(type))
}

/**
 * A text field as a query parameter would be, by the body's schema: empty
 * means absent; an integer field becomes a number only when written in plain
 * decimal digits (otherwise the text stays, and validation names the field),
 * a number field when it reads as one; anything else is trimmed text.
 */
function convertField (value: unknown, schema: FieldSchema): string | number | undefined {
  const raw = String(value)
  const text = raw.trim()
  if (text === '') return undefined
  if (takes(schema, 'integer')) return DECIMAL_INTEGER.test(raw) ? Number(raw) : raw
  if (takes(schema, 'number')) {
    const number = Number(text)
    return Number.isFinite(number) ? number : text
  }
  return text
}

function tooLarge (maxSize: number): Error {
  return new errors.payloadTooLarge(`The file is larger than ${maxSize} bytes`)
}

/** Errors of the multipart parser without a code of their own are a malformed body. */
function parseError (error: unknown, maxSize: number): unknown {
  const code = (error as { code?: unknown } | null)?.code
  if (code === 'FST_REQ_FILE_TOO_LARGE') return tooLarge(maxSize)
  if (code === 'ERR_STREAM_PREMATURE_CLOSE') return invalidBody('The upload was interrupted')
  if (typeof code === 'string') return error
  return invalidBody('The multipart body is malformed')
}

/** Streams one file to disk, refusing it as soon as it grows past the limit. */
async function saveFile (stream: Readable & { truncated: boolean }, dir: string, maxSize: number): Promise<Received> {
  // The parser may have passed the limit, or met the end of a body cut short, before this runs.
  if (stream.truncated) throw tooLarge(maxSize)
  if (stream.destroyed) throw invalidBody('The multipart body ends inside the file')
  stream.once('limit', () => stream.destroy(tooLarge(maxSize)))
  const file = path.join(dir, temporaryName())
  const out = createWriteStream(file, { flags: 'wx', mode: 0o640 })
  const hash = createHash('sha256')
  const hashing = new Transform({ transform (chunk: Buffer, _encoding, done) { hash.update(chunk); done(null, chunk) } })
  try {
    await pipeline(stream, hashing, out)
  } catch (error) {
    await removeQuietly(file)
    throw error
  }
  return { path: file, size: out.bytesWritten, sha256: hash.digest('hex'), fileName: undefined }
}

/**
 * Calls `tooSlow` once when the socket brings fewer than `minRate` bytes a
 * second over a window, the first window counted from now. Answers a
 * function that stops watching.
 */
function watchRate (request: FastifyRequest, rules: UploadRules, tooSlow: () => void): () => void {
  const socket = request.raw.socket
  if (rules.minRate === 0 || typeof socket?.bytesRead !== 'number') return () => {}
  const least = rules.minRate * rules.rateWindowMs / 1000
  let last = socket.bytesRead
  const timer = setInterval(() => {
    if (socket.bytesRead - last < least) {
      clearInterval(timer)
      tooSlow()
    }
    last = socket.bytesRead
  }, rules.rateWindowMs)
  timer.unref()
  return () => clearInterval(timer)
}

/** The parts of a body, until `stopped` rejects. */
async function * partsUntil<T> (parts: AsyncIterable<T>, stopped: Promise<never>): AsyncGenerator<T> {
  const iterator = parts[Symbol.asyncIterator]()
  for (;;) {
    const next = await Promise.race([iterator.next(), stopped])
    if (next.done === true) return
    yield next.value
  }
}

/**
 * Reads a multipart body: one file in the field `file` and the allowed text
 * fields, in any order. The file is streamed to a temporary file in the target
 * directory and its type decided from its bytes. Whatever is refused (not
 * multipart, too large, too slow, a missing or second file, an unknown field,
 * a type not allowed) leaves nothing on disk.
 */
export async function receiveUpload (request: FastifyRequest, rules: UploadRules): Promise<Upload> {
  if (!request.isMultipart()) throw new errors.unsupportedMediaType('The request must be multipart/form-data')
  const fields: Record<string, string | number> = {}
  const fieldSchemas = ((request.routeOptions.schema?.body as { properties?: Record<string, FieldSchema> } | undefined)?.properties) ?? {}
  const seen = new Set<string>()
  let received: Received | undefined
  let saving: Readable | null = null
  let stop: (error: Error) => void = () => {}
  const stopped = new Promise<never>((_resolve, reject) => { stop = reject })
  stopped.catch(() => {})
  const stopWatching = watchRate(request, rules, () => {
    const error = new errors.requestTimeout(`The upload came slower than ${rules.minRate} bytes a second`)
    saving?.destroy(error)
    stop(error)
  })
  try {
    const parts = request.parts({
      limits: {
        fileSize: rules.maxSize,
        files: 1,
        fields: rules.fields.length + 1,
        parts: rules.fields.length + 2,
        fieldSize: 1024,
        headerPairs: 20
      }
    })
    for await (const part of partsUntil(parts, stopped)) {
      const name = part.fieldname
      if (part.type === 'file' ? name !== FILE_FIELD : !rules.fields.includes(name)) {
        if (name === FILE_FIELD) throw invalidBody('The field file must be a file')
        // An unknown field is refused as in any other body, by its name.
        if (part.type !== 'file') throw withDetails(new errors.validation('The request is not valid'), { issues: [{ path: `/body/${name.slice(0, 100)}`, message: 'is not allowed' }] })
        throw invalidBody(`Unknown field ${name.slice(0, 100)}`)
      }
      if (seen.has(name)) throw invalidBody(`The field ${name} was sent twice`)
      seen.add(name)
      if (part.type === 'file') {
        saving = part.file
        received = await saveFile(part.file, rules.dir, rules.maxSize)
        saving = null
        received.fileName = part.filename
      } else {
        const value = convertField(part.value, fieldSchemas[name])
        if (value !== undefined) fields[name] = value
      }
    }
  } catch (error) {
    if (received !== undefined) await removeQuietly(received.path)
    // Whatever the client still sends is read and dropped.
    request.raw.unpipe()
    request.raw.resume()
    throw parseError(error, rules.maxSize)
  } finally {
    stopWatching()
  }
  if (received === undefined) throw invalidBody('The file is missing: send it in the field file')

  const type = await detectType(received.path, rules.types).catch(async error => {
    await removeQuietly((received as Received).path)
    throw error
  })
  if (type === undefined) {
    await removeQuietly(received.path)
    throw new errors.unsupportedMediaType(`The file's content is not an accepted type (${rules.types.join(', ')})`)
  }
  return { path: received.path, size: received.size, sha256: received.sha256, type, fileName: cleanFileName(received.fileName, type.ext), fields }
}
