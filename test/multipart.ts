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
