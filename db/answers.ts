import net from 'node:net'

/** The code of the error a connection fails with when its server stops answering. */
export const NO_ANSWER = 'DATABASE_NOT_ANSWERING'

interface SocketOptions {
  host: string[]
  port: number[]
  /** A Unix socket's path, or false. */
  path?: string | false
}

/**
 * A socket factory for postgres.js (its `socket` option). A connection that
 * sent something and has heard nothing back for `ms` is destroyed, so its
 * queries fail at once instead of waiting on a server that hangs (a stopped
 * process, a host gone without a word). A server that refuses or drops
 * connections is noticed by the socket itself; this is for one that does
 * neither. An idle connection sends nothing and is left alone.
 */
export function answeringSocket (ms: number): (options: SocketOptions) => net.Socket {
  return options => {
    const socket = typeof options.path === 'string' && options.path !== ''
      ? net.connect(options.path)
      : net.connect(options.port[0], options.host[0])
    let waiting: NodeJS.Timeout | null = null
    const heard = (): void => {
      if (waiting !== null) clearTimeout(waiting)
      waiting = null
    }
    const silent = (): void => {
      waiting = null
      socket.destroy(Object.assign(new Error(`the database did not answer within ${ms / 1000} s`), { code: NO_ANSWER }))
    }
    const write = socket.write
    socket.write = function (this: net.Socket, ...args: Parameters<net.Socket['write']>): boolean {
      if (waiting === null && !socket.destroyed) {
        waiting = setTimeout(silent, ms)
        waiting.unref()
      }
      return write.apply(this, args)
    } as net.Socket['write']
    socket.on('data', heard)
    socket.on('close', heard)
    return socket
  }
}
