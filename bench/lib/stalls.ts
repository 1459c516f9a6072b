import { randomBytes } from 'node:crypto'
import { writeFile } from 'node:fs/promises'
import net from 'node:net'
import path from 'node:path'
import { createSql } from '../../db/client'
import { onCleanup } from './cleanup'
import type { World } from './scenarios'
import type { SeededChild } from './seed'
import { settings } from './settings'

/**
 * Clients that hold connections without reading or finishing: owners who
 * start family exports and never read the archive, and slowloris connections
 * that send a request's headers one byte a second. Every socket goes to
 * 127.0.0.1 and is closed when the scenario ends, however it ends.
 */

const MB = 1024 * 1024

export interface StallingFamily {
  familyId: number
  /** The owner, who alone may export the family. */
  userId: number
  /** The child the large files are attached to. */
  childId: number
}

export interface StallCounts {
  exports: {
    opened: number
    /** By the status line, when one arrived; the rest of the answer is never read. */
    status200: number
    status429: number
    otherStatus: number
    noStatus: number
    errors: number
  }
  slowloris: {
    /** How many are open at any time. */
    connections: number
    /** All that were opened: one that the service cuts is replaced while the scenario runs. */
    opened: number
    cutByService: number
    /** Of those cut, how many got a 408 status line first. */
    answered408: number
    /** Connections that failed before they were established. */
    errors: number
  }
}

/** The last families, so that the reads alongside can leave all their children out. */
export function stallingFamilies (children: SeededChild[], count = settings.stallingFamilies): StallingFamily[] {
  const families = new Map<number, StallingFamily>()
  for (const child of children) {
    if (!families.has(child.familyId)) families.set(child.familyId, { familyId: child.familyId, userId: child.userId, childId: child.id })
  }
  const all = [...families.values()].sort((a, b) => a.familyId - b.familyId)
  if (all.length <= count) throw new Error(`${count} stalling families need more than ${all.length} families`)
  return all.slice(-count)
}

/**
 * Attachment files large enough that an archive nobody reads fills the socket
 * buffers on both sides, so the download really stalls: random bytes, written
 * into the service's UPLOAD_DIR, with their rows. Answers the bytes written.
 */
export async function addLargeFiles (databaseUrl: string, uploadDir: string, families: StallingFamily[]): Promise<number> {
  const sql = createSql(databaseUrl, { max: 1 })
  const bytes = settings.stallFileMb * MB
  let written = 0
  try {
    for (const family of families) {
      for (let k = 1; k <= settings.stallFilesPerFamily; k++) {
        const storedName = `${randomBytes(16).toString('hex')}.pdf`
        await writeFile(path.join(uploadDir, storedName), randomBytes(bytes))
        written += bytes
        await sql`
          insert into attachments (child_id, file_name, stored_name, content_type, size_bytes)
          values (${family.childId}, ${`scan-${k}.pdf`}, ${storedName}, 'application/pdf', ${bytes})
        `
      }
    }
  } finally {
    await sql.end({ timeout: 5 })
  }
  return written
}

/**
 * A request's header lines without the blank line that would end them: about
 * 8 KB, more bytes than seconds in any run at one byte a second.
 */
function unfinishedHeaders (port: number): Buffer {
  const lines = [`GET /api/health HTTP/1.1\r\n`, `Host: 127.0.0.1:${port}\r\n`, 'User-Agent: slowloris\r\n']
  for (let i = 0; i < 500; i++) lines.push(`X-Slow-${i}: ${i}\r\n`)
  return Buffer.from(lines.join(''), 'latin1')
}

function statusOf (chunk: Buffer): number | null {
  const match = /^HTTP\/1\.[01] (\d{3})/.exec(chunk.toString('latin1', 0, 16))
  return match === null ? null : Number(match[1])
}

export interface Stalls {
  /** Destroys every socket, waits (bounded) until all are closed and answers the counts. */
  close: () => Promise<StallCounts>
}

/**
 * Opens the stalled downloads and the slowloris connections at once. They stay
 * until `close`, or at the latest `limitMs` (a safety bound), or Ctrl-C.
 */
export function startStalls (world: World, families: StallingFamily[], limitMs: number): Stalls {
  const url = new URL(world.serviceUrl)
  if (url.hostname !== '127.0.0.1') throw new Error(`the service must listen on 127.0.0.1, not ${url.hostname}`)
  const port = Number(url.port)
  const sockets = new Set<net.Socket>()
  let stopping = false
  const counts: StallCounts = {
    exports: { opened: 0, status200: 0, status429: 0, otherStatus: 0, noStatus: 0, errors: 0 },
    slowloris: { connections: settings.slowlorisConnections, opened: 0, cutByService: 0, answered408: 0, errors: 0 }
  }
  // Every owner's token first, so that nothing is opened when one is missing.
  const tokens = families.map(family => {
    const token = world.tokens.get(family.userId)
    if (token === undefined) throw new Error(`no token for the owner of family ${family.familyId}`)
    return token
  })

  const connect = (): net.Socket => {
    const socket = net.connect({ host: '127.0.0.1', port })
    sockets.add(socket)
    socket.once('close', () => sockets.delete(socket))
    return socket
  }

  // Stalled downloads, spread over the owners in turn: each reads at most its
  // status line, then pauses and is never read again.
  const exportStatus: Array<number | null> = []
  for (let i = 0; i < settings.stalledExports; i++) {
    const family = families[i % families.length]
    const token = tokens[i % families.length]
    const index = exportStatus.push(null) - 1
    counts.exports.opened += 1
    const socket = connect()
    socket.on('error', () => { counts.exports.errors += 1 })
    socket.once('data', (chunk: Buffer) => {
      socket.pause()
      exportStatus[index] = statusOf(chunk)
    })
    socket.write(
      `GET /api/families/${family.familyId}/export HTTP/1.1\r\n` +
      `Host: 127.0.0.1:${port}\r\n` +
      `Authorization: Bearer ${token}\r\n` +
      'Accept: application/zip\r\n\r\n'
    )
  }

  // Slowloris: one byte of headers a second from each connection. One the
  // service cuts is replaced at the next tick, so that as many stay open.
  const headers = unfinishedHeaders(port)
  const slow = new Map<net.Socket, number>()
  let replace = 0
  const openSlow = (): void => {
    counts.slowloris.opened += 1
    const socket = connect()
    slow.set(socket, 0)
    let connected = false
    let answered = false
    socket.once('connect', () => { connected = true })
    socket.on('error', () => {})
    socket.on('data', (chunk: Buffer) => {
      if (!answered && statusOf(chunk) === 408) counts.slowloris.answered408 += 1
      answered = true
    })
    socket.once('close', () => {
      slow.delete(socket)
      if (stopping) return
      if (connected) counts.slowloris.cutByService += 1
      else counts.slowloris.errors += 1
      replace += 1
    })
  }
  for (let i = 0; i < settings.slowlorisConnections; i++) openSlow()
  const trickle = (): void => {
    for (; replace > 0; replace--) openSlow()
    for (const [socket, sent] of slow) {
      // The prepared lines last longer than any run allows (limitMs); past them, silence.
      if (socket.destroyed || !socket.writable || sent >= headers.length) continue
      socket.write(headers.subarray(sent, sent + 1))
      slow.set(socket, sent + 1)
    }
  }
  trickle()
  const ticker = setInterval(trickle, 1000)

  let closing: Promise<StallCounts> | null = null
  const close = (): Promise<StallCounts> => {
    closing ??= (async () => {
      stopping = true
      clearInterval(ticker)
      clearTimeout(limit)
      const waits = [...sockets].map(socket => new Promise<void>(resolve => {
        if (socket.closed) resolve()
        else socket.once('close', () => resolve())
      }))
      for (const socket of sockets) socket.destroy()
      await Promise.race([Promise.all(waits), new Promise(resolve => setTimeout(resolve, 5000).unref())])
      for (const status of exportStatus) {
        if (status === 200) counts.exports.status200 += 1
        else if (status === 429) counts.exports.status429 += 1
        else if (status === null) counts.exports.noStatus += 1
        else counts.exports.otherStatus += 1
      }
      return counts
    })()
    return closing
  }
  const limit = setTimeout(() => { void close() }, limitMs)
  limit.unref()
  onCleanup('closing the stalled downloads and slow connections', async () => { await close() })
  return { close }
}
