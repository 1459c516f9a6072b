import sharp from 'sharp'
import { call, type App, type Pair } from './helper'

export interface Part {
  name: string
  value: string | Buffer
  filename?: string
  type?: string
}

/** A multipart body built by hand, so that every byte of it is the test's choice. */
export function form (parts: Part[]): { payload: Buffer, headers: Record<string, string> } {
  const boundary = `----test${Math.random().toString(16).slice(2)}`
  const chunks: Buffer[] = []
  for (const part of parts) {
    let head = `--${boundary}\r\nContent-Disposition: form-data; name="${part.name}"`
    if (part.filename !== undefined) head += `; filename="${part.filename}"`
    if (part.type !== undefined) head += `\r\nContent-Type: ${part.type}`
    chunks.push(Buffer.from(`${head}\r\n\r\n`), Buffer.from(part.value), Buffer.from('\r\n'))
  }
  chunks.push(Buffer.from(`--${boundary}--\r\n`))
  return { payload: Buffer.concat(chunks), headers: { 'content-type': `multipart/form-data; boundary=${boundary}` } }
}

/** The `file` part of an upload. */
export function file (value: Buffer, filename: string, type: string): Part {
  return { name: 'file', value, filename, type }
}

/** POSTs a multipart body of `parts` through the real app, as a signed-in user or (null) as nobody. */
export function postForm (app: App, pair: Pair | null, url: string, parts: Part[]) {
  const body = form(parts)
  return call(app, pair, 'POST', url, body.payload, body.headers)
}

export type ImageFormat = 'png' | 'jpeg' | 'webp' | 'gif'

/** An image of one colour in the given format. */
export async function solidImage (format: ImageFormat, width: number, height: number, background: { r: number, g: number, b: number }): Promise<Buffer> {
  return sharp({ create: { width, height, channels: 3, background } }).toFormat(format).toBuffer()
}
